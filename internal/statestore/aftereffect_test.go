package statestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/sim/objstore"
)

// afterEffectProxy forwards S3 requests to the server; once armed for a method and a key, the
// next such request reaches the server (and takes effect) but its answer is replaced by a 500,
// as a proxy or a load balancer failing on the way back would. The S3 client retries it.
type afterEffectProxy struct {
	rp *httputil.ReverseProxy

	mu          sync.Mutex
	method, key string
	hits        int
}

func (p *afterEffectProxy) arm(method, key string) {
	p.mu.Lock()
	p.method, p.key, p.hits = method, key, 0
	p.mu.Unlock()
}

func (p *afterEffectProxy) fired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

func (p *afterEffectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	hit := p.method != "" && r.Method == p.method && strings.Contains(r.URL.Path, "/"+p.key)
	if hit {
		p.method, p.hits = "", p.hits+1
	}
	p.mu.Unlock()
	if !hit {
		p.rp.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
}

// TestLockWriteTookEffectThenFailed: a lock write that took effect but whose answer was lost (a
// 500 after the fact; the S3 client retries the conditional request, which the first one now
// fails) leaves the lock carrying this holder's id. That lock is ours: taking it, renewing it
// and releasing it must go on, not report it busy or lost "to" its own holder — the soak (seed
// 2080318192311439616) found a reaper's orphan sweep that declared its own lock busy and left it
// held for its whole lease, so that no later run could tear the cluster down.
func TestLockWriteTookEffectThenFailed(t *testing.T) {
	w := s3World(t)
	ctx := testCtx(t)
	key := newKey(t)
	direct := w.open(t, key)
	target, err := url.Parse(w.srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &afterEffectProxy{rp: httputil.NewSingleHostReverseProxy(target)}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	client := s3.New(s3.Options{
		Region: objstore.Region, BaseEndpoint: aws.String(front.URL), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(w.srv.AccessKey, w.srv.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	bucketName := strings.TrimPrefix(strings.SplitN(w.cfg("").StateURL, "?", 2)[0], "s3://")
	b, err := s3blob.OpenBucket(ctx, client, bucketName, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, err := Open(ctx, Config{StateURL: w.cfg("").StateURL}, WithBucket(b), WithKeeper(direct.keeper))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	// CheckBackend's probe create (every reaper run starts with it) is the same kind of write.
	p.arm(http.MethodPut, prefixProbe)
	if err := s.CheckBackend(ctx); err != nil {
		t.Fatalf("CheckBackend after its probe create took effect and answered 500: %v", err)
	}
	if p.fired() != 1 {
		t.Fatalf("the proxy answered %d probe writes with a 500 after their effect, want 1", p.fired())
	}

	// A state document's create and replace: the sealed bytes are this write's alone, so a
	// write that took effect and answered 500 is recognised as ours, not taken for another
	// writer's (an up or down failed with "conflict" for nothing).
	doc := &Document{Header: Header{Cluster: "c-state-" + randomID()[:6], Phase: "provisioning"}, Body: []byte(`{"n":1}`)}
	for i, what := range []string{"create", "replace"} {
		p.arm(http.MethodPut, stateKey(doc.Header.Cluster))
		doc.Body = []byte(fmt.Sprintf(`{"n":%d}`, i+1))
		if err := s.Put(ctx, doc); err != nil {
			t.Fatalf("state %s that took effect and answered 500: %v", what, err)
		}
		if p.fired() != 1 {
			t.Fatalf("state %s: the proxy answered %d writes with a 500 after their effect, want 1", what, p.fired())
		}
		got, err := direct.Get(ctx, doc.Header.Cluster)
		if err != nil || string(got.Body) != string(doc.Body) || got.Header.Serial != doc.Header.Serial {
			t.Fatalf("state %s: stored %+v %v, want serial %d body %s", what, got, err, doc.Header.Serial, doc.Body)
		}
	}

	for _, tc := range []struct {
		name string
		// fault arms the proxy on the lock object (nil: no fault); step is the operation it hits.
		method string
		step   func(ctx context.Context, cluster string, l **Lock) error
	}{
		{"lock: the create took effect", http.MethodPut, func(ctx context.Context, cluster string, l **Lock) error {
			var err error
			*l, err = s.Lock(ctx, cluster, LockInfo{Actor: "pocbot-reaper", RunID: "5039", Command: "reap orphan"}, time.Minute)
			return err
		}},
		{"renew: the replace took effect", http.MethodPut, func(ctx context.Context, cluster string, l **Lock) error {
			return (*l).Renew(ctx)
		}},
		{"renew: the version of the last write was never learnt", "", func(ctx context.Context, cluster string, l **Lock) error {
			(*l).mu.Lock()
			(*l).version = "unknown:answer-lost" // as versionAfterWrite leaves it when its read back fails
			(*l).mu.Unlock()
			return (*l).Renew(ctx)
		}},
		{"release: after a renew whose version was never learnt", "", func(ctx context.Context, cluster string, l **Lock) error {
			(*l).mu.Lock()
			(*l).version = "unknown:answer-lost"
			(*l).mu.Unlock()
			return (*l).Release(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := "c-" + strings.NewReplacer(" ", "-", ":", "").Replace(tc.name)[:8] + randomID()[:6]
			var l *Lock
			if !strings.HasPrefix(tc.name, "lock:") {
				var err error
				if l, err = s.Lock(ctx, cluster, LockInfo{Actor: "pocbot-reaper", RunID: "5039", Command: "reap orphan"}, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			if tc.method != "" {
				p.arm(tc.method, ClusterLock(cluster).object())
			}
			if err := tc.step(ctx, cluster, &l); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if tc.method != "" && p.fired() != 1 {
				t.Fatalf("the proxy answered %d requests with a 500 after their effect, want 1: the test tested nothing", p.fired())
			}
			cur, err := direct.ReadLock(ctx, cluster)
			if strings.HasPrefix(tc.name, "release:") {
				if cur != nil || err != nil {
					t.Fatalf("after Release the lock is still there: %+v %v", cur, err)
				}
				return
			}
			if err != nil || cur == nil || cur.ID != l.Info().ID {
				t.Fatalf("the lock is not the holder's: %+v (holder %+v) %v", cur, l.Info(), err)
			}
			// Ours to renew and release: nobody is left waiting out its lease.
			if err := l.Renew(ctx); err != nil {
				t.Fatalf("Renew afterwards: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release afterwards: %v", err)
			}
			if cur, err := direct.ReadLock(ctx, cluster); cur != nil || err != nil {
				t.Fatalf("after Release the lock is still held: %+v %v", cur, err)
			}
			var le *LockedError
			if l2, err := direct.Lock(ctx, cluster, LockInfo{Actor: "next"}, time.Minute); errors.As(err, &le) || err != nil {
				t.Fatalf("the next run cannot take the lock: %v", err)
			} else {
				_ = l2.Release(ctx)
			}
		})
	}
}
