package reaper_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/reaper"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

const repo = "acme/shop"

// env is an emulated world, Ops whose Scaleway traffic goes through a fault-injecting proxy, and
// a GitHub client acting as the App on acme/shop.
type env struct {
	w      *world.World
	ops    *clusterops.Ops
	driver *scaleway.Driver
	client *scw.Client // straight to the emulator, for the test's own resources
	store  *statestore.Store
	gh     *github.Client
	spec   provision.Spec
	faults *faultProxy
	log    *slog.Logger
}

// faultProxy answers 403 to DELETEs whose path contains one of its ids, while armed.
type faultProxy struct {
	mu  sync.Mutex
	ids map[string]bool
	n   int
}

func (f *faultProxy) fail(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = map[string]bool{}
	for _, id := range ids {
		f.ids[id] = true
	}
}

func (f *faultProxy) injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *faultProxy) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			f.mu.Lock()
			hit := false
			for id := range f.ids {
				if strings.Contains(r.URL.Path, id) {
					hit = true
				}
			}
			if hit {
				f.n++
			}
			f.mu.Unlock()
			if hit {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"message":"injected fault: deletion refused","type":"permissions_denied","details":[]}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func newEnv(t testing.TB, s3 string) *env {
	t.Helper()
	ctx := t.Context()
	opts := world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: s3}
	w, err := world.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	fp := &faultProxy{}
	target, _ := url.Parse(w.ScalewayURL)
	proxy := httptest.NewServer(fp.wrap(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)
	p := worldtest.New(t, w, worldtest.Options{Log: log, ScalewayURL: proxy.URL, StepTimeout: 20 * time.Second})
	ops, driver, store, spec := p.Ops, p.Driver, p.Store, p.Spec
	w.GitHub.AddRepo(repo, "main")
	gh, err := github.NewClient(ctx, github.Auth{AppID: w.GitHub.AppID(), PrivateKeyPEM: w.GitHub.AppPrivateKeyPEM(),
		Owner: "acme", Repo: "shop", BaseURL: w.GitHubURL, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return &env{w: w, ops: ops, driver: driver, client: p.Client, store: store, gh: gh, spec: spec, faults: fp, log: log}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() && os.Getenv("REAPER_TEST_LOG") != "" {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// start is a file-backed env and a context that ends after d.
func start(t testing.TB, d time.Duration) (*env, context.Context) {
	t.Helper()
	return newEnv(t, "file"), ctxFor(t, d)
}

// config is a reaper run with GitHub on acme/shop at the given decision time.
func (e *env) config(now time.Time) reaper.Config {
	return reaper.Config{Ops: e.ops, Repository: repo, Issues: e.gh, Inventory: e.driver, Spec: e.spec,
		WarnBefore: time.Hour, Now: func() time.Time { return now }, Log: e.log}
}

// putDoc writes a state document with no cluster behind it (what the reaper reads is the header;
// a teardown of it builds the graph, finds nothing recorded and sweeps nothing).
func (e *env) putDoc(t testing.TB, h statestore.Header) {
	t.Helper()
	st, err := provision.NewState(h.Cluster, e.spec)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if h.Phase == "" {
		h.Phase = string(lifecycle.PhaseReady)
	}
	if err := e.store.Put(t.Context(), &statestore.Document{Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) header(t testing.TB, cluster string) (statestore.Header, bool) {
	t.Helper()
	hs, err := e.store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Cluster == cluster {
			return h, true
		}
	}
	return statestore.Header{}, false
}

// botComments are the comments the App posted on an issue.
func (e *env) botComments(number int) []ghsim.Comment {
	var out []ghsim.Comment
	for _, c := range e.w.GitHub.Comments(repo, number) {
		if c.Author == e.w.GitHub.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

func decisionOf(rep reaper.Report, cluster string) (reaper.Decision, bool) {
	for _, d := range rep.Decisions {
		if d.Cluster == cluster {
			return d, true
		}
	}
	return reaper.Decision{}, false
}

func table(t testing.TB, rep reaper.Report) string {
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
