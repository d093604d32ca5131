package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob/memblob"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision/images"
	simgithub "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/imagefactory"
	simscw "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/version"
	"github.com/pocbot/pocbot/internal/wiring"
)

// uaRecorder serves next and records the User-Agent of every request.
type uaRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []string
}

func (u *uaRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.seen = append(u.seen, r.UserAgent())
	u.mu.Unlock()
	u.next.ServeHTTP(w, r)
}

func (u *uaRecorder) check(t *testing.T, who string) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatalf("%s: no request reached the stand-in", who)
	}
	for _, ua := range u.seen {
		if !strings.Contains(ua, version.UserAgent()) {
			t.Errorf("%s: User-Agent %q does not carry %s", who, ua, version.UserAgent())
		}
	}
}

// Every client the bot builds names pocbot and its version to the service (on loopback stand-ins).
func TestEveryClientSendsTheUserAgent(t *testing.T) {
	old := version.Version
	version.Version = "v0.0.0-test"
	t.Cleanup(func() { version.Version = old })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	t.Run("scaleway", func(t *testing.T) {
		rec := &uaRecorder{next: simscw.New(simscw.Options{SecretKey: "11111111-2222-4333-8444-555555555555"})}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		env := map[string]string{"SCW_ACCESS_KEY": "SCWXXXXXXXXXXXXXXXXX", "SCW_SECRET_KEY": "11111111-2222-4333-8444-555555555555", "SCW_API_URL": srv.URL,
			"SCW_DEFAULT_PROJECT_ID": "11111111-2222-4333-8444-555555555555"}
		c, err := wiring.ScalewayClient(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		_, _ = instance.NewAPI(c).ListServers(&instance.ListServersRequest{Zone: scw.ZoneFrPar1}, scw.WithContext(ctx))
		rec.check(t, "scaleway")
	})
	t.Run("github", func(t *testing.T) {
		gs, err := simgithub.New(simgithub.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		rec := &uaRecorder{next: gs}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		c, err := github.NewClient(ctx, github.Auth{Token: "ghs_test", Owner: "acme", Repo: "shop", BaseURL: srv.URL,
			Logger: slog.New(slog.DiscardHandler), Retry: github.RetryPolicy{Attempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Permission(ctx, "octocat")
		rec.check(t, "github")
	})
	t.Run("object storage", func(t *testing.T) {
		rec := &uaRecorder{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNotFound)
		})}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		env := map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
		b, err := wiring.OpenS3(ctx, "s3://images?region=fr-par&use_path_style=true&endpoint="+srv.URL, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		_, _ = b.Exists(ctx, "x")
		rec.check(t, "object storage")
	})
	t.Run("image factory", func(t *testing.T) {
		rec := &uaRecorder{next: imagefactory.New(imagefactory.Options{QCOW2Size: 1 << 16})}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		yml, id := images.Schematic([]string{"siderolabs/iscsi-tools"})
		bucket := memblob.OpenBucket(nil)
		defer bucket.Close()
		if _, _, err := images.EnsureObject(ctx, srv.URL, bucket, "k.qcow2", images.Source{SchematicYAML: yml, SchematicID: id, Version: "v1.13.11"}, images.Options{}); err != nil {
			t.Fatalf("EnsureObject on the stand-in: %v", err)
		}
		rec.check(t, "image factory")
	})
}
