package wiring

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An Object Storage endpoint that takes a request and never answers (a stalled front, a dead
// connection the kernel still holds) must not hold the bot until its job's timeout: the client
// gives up on each attempt after the header timeout, retries, and the call fails long before the
// caller's own deadline.
func TestObjectStorageStallFailsWithinTheHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		select { // stall until the test ends (bounded: the server's Close follows)
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	env := map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
	const headerTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := openS3Within(ctx, "s3://state?region=fr-par&use_path_style=true&endpoint="+srv.URL,
		func(k string) string { return env[k] }, headerTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	_, err = b.ReadAll(ctx, "clusters/x.json")
	took := time.Since(start)
	t.Logf("stalled read failed after %s, %d attempts: %v", took.Round(time.Millisecond), attempts.Load(), err)
	if err == nil {
		t.Fatal("a read from a server that never answers succeeded")
	}
	if ctx.Err() != nil {
		t.Fatalf("the read waited for the caller's deadline (%s): no header timeout", took.Round(time.Millisecond))
	}
	if !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Errorf("error %q does not say the server did not answer", err)
	}
}
