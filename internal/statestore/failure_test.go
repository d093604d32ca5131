package statestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/pocbot/pocbot/internal/s3opts"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"gocloud.dev/blob/s3blob"
)

// TestFileWriterDiesMidWrite: a process killed while writing leaves the previous document whole.
func TestFileWriterDiesMidWrite(t *testing.T) {
	t.Parallel()
	w := fileWorld(t)
	ctx, key, s := w.seeded(t)
	out, err := helperCmd(t, w, key, "die-mid-write").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("child did not die mid-write (exit 7): %v\n%s", err, out)
	}
	got, err := s.Get(ctx, "c")
	if err != nil || !bytes.Equal(got.Body, sampleDoc("c").Body) || got.Header.Serial != 1 {
		t.Fatalf("after a writer died: %v", err)
	}
	if hs, err := s.List(ctx); err != nil || len(hs) != 1 {
		t.Fatalf("List after a writer died: %v %v", hs, err)
	}
	got.Body = []byte("next")
	if err := s.Put(ctx, got); err != nil {
		t.Fatalf("Put after a writer died: %v", err)
	}
}

// cutProxy forwards TCP to target; once armed, it cuts every connection after limit bytes
// from the client: an upload that dies halfway, as on a broken network.
type cutProxy struct {
	l      net.Listener
	target string
	limit  int64
	armed  atomic.Bool
	cuts   atomic.Int32
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, target string, limit int64) *cutProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target, limit: limit}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() { l.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	deadline := time.Now().Add(30 * time.Second)
	c.SetDeadline(deadline)
	u.SetDeadline(deadline)
	go func() { io.Copy(c, u); c.Close() }()
	if p.armed.Load() {
		io.CopyN(u, c, p.limit)
		p.cuts.Add(1)
		return // both ends close: the server saw half a request body
	}
	io.Copy(u, c)
}

func TestS3WriterFailsMidWrite(t *testing.T) {
	t.Parallel()
	w := s3World(t)
	ctx, _, s := w.seeded(t)
	p := startCutProxy(t, strings.TrimPrefix(w.srv.Endpoint, "http://"), 64<<10)
	client := s3.New(s3.Options{
		Region: objstore.Region, BaseEndpoint: aws.String("http://" + p.l.Addr().String()), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(w.srv.AccessKey, w.srv.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           2,
		// A fresh connection per request: one kept alive from before the proxy was armed would
		// carry the upload uncut (the stand-in's dialect proxy keeps connections alive).
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	})
	bucketName := strings.TrimPrefix(strings.SplitN(w.cfg("").StateURL, "?", 2)[0], "s3://")
	b, err := s3blob.OpenBucket(ctx, client, bucketName, s3opts.Blob())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	viaProxy, err := Open(ctx, Config{StateURL: w.cfg("").StateURL}, WithBucket(b), WithKeeper(s.keeper))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := viaProxy.Get(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	p.armed.Store(true)
	doc.Body = bytes.Repeat([]byte("x"), 256<<10)
	if err := viaProxy.Put(ctx, doc); err == nil {
		t.Fatal("Put through a connection cut halfway succeeded")
	}
	if p.cuts.Load() == 0 {
		t.Fatal("the proxy cut nothing: the test did not test a failed upload")
	}
	got, err := s.Get(ctx, "c")
	if err != nil || !bytes.Equal(got.Body, sampleDoc("c").Body) || got.Header.Serial != 1 {
		t.Fatalf("after a failed upload: serial %d, %v", got.Header.Serial, err)
	}
}

func TestBucketMissingAndPermission(t *testing.T) {
	w := s3World(t)
	ctx := testCtx(t)
	srv := w.srv
	for _, tc := range []struct {
		name    string
		bucket  string
		secret  string
		want    error
		message string
	}{
		{"missing bucket", "no-such-bucket", srv.SecretKey, ErrBucketMissing, "s3://no-such-bucket"},
		{"wrong secret", strings.TrimPrefix(strings.SplitN(w.cfg("").StateURL, "?", 2)[0], "s3://"), "wrong-secret", ErrPermission, "access key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			s, err := Open(ctx, Config{StateURL: srv.BucketURL(tc.bucket), KeyURL: newKey(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.CheckBackend(ctx)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("CheckBackend: %v, want %v mentioning %q", err, tc.want, tc.message)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Fatal("the error shows the secret key")
			}
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		_, err := Open(ctx, Config{StateURL: "file://" + t.TempDir() + "/nope", KeyURL: newKey(t)})
		if !errors.Is(err, ErrBucketMissing) || !strings.Contains(err.Error(), "create_dir") {
			t.Fatalf("Open of a missing dir: %v", err)
		}
		s, err := Open(ctx, Config{StateURL: "file://" + t.TempDir() + "/made?create_dir=true", KeyURL: newKey(t)})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})
}

func TestPublicAndSignedURL(t *testing.T) {
	t.Parallel()
	inWorlds(t, func(t *testing.T, ctx context.Context, w *world, key string, s *Store) {
		data := []byte("age-encryption.org/v1 ...")
		if err := s.PutPublic(ctx, "c/kubeconfig.alice.age", data); err != nil {
			t.Fatal(err)
		}
		u, err := s.SignedURL(ctx, "c/kubeconfig.alice.age", 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		if w.name == "file" {
			if !strings.HasPrefix(u, "file://") {
				t.Fatalf("file URL %q", u)
			}
			got, err = os.ReadFile(strings.TrimPrefix(u, "file://"))
		} else {
			var resp *http.Response
			resp, err = http.Get(u) // no credentials: the signature is the permission
			if err == nil {
				defer resp.Body.Close()
				got, err = io.ReadAll(resp.Body)
				if resp.StatusCode != 200 {
					t.Fatalf("GET signed URL: %s %s", resp.Status, got)
				}
			}
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetch %s: %q %v", u, got, err)
		}
		if _, err := s.SignedURL(ctx, "c/missing", time.Minute); !errors.Is(err, ErrNotFound) {
			t.Fatalf("SignedURL of a missing object: %v", err)
		}
		for _, bad := range []string{"", "/abs", "../up", "a//b"} {
			if err := s.PutPublic(ctx, bad, data); err == nil {
				t.Fatalf("PutPublic accepted key %q", bad)
			}
		}
		// DeletePublic removes a directory of public objects, and only that one.
		if err := s.PutPublic(ctx, "c2/kubeconfig.bob.age", data); err != nil {
			t.Fatal(err)
		}
		if err := s.DeletePublic(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SignedURL(ctx, "c/kubeconfig.alice.age", time.Minute); !errors.Is(err, ErrNotFound) {
			t.Errorf("after DeletePublic(c): %v", err)
		}
		if _, err := s.SignedURL(ctx, "c2/kubeconfig.bob.age", time.Minute); err != nil {
			t.Errorf("DeletePublic(c) touched c2: %v", err)
		}
	})
}

// seeded opens a store with a fresh key on w, holding the sample document of cluster "c".
func (w *world) seeded(t *testing.T) (context.Context, string, *Store) {
	t.Helper()
	ctx, key := testCtx(t), newKey(t)
	s := w.open(t, key)
	if err := s.Put(ctx, sampleDoc("c")); err != nil {
		t.Fatal(err)
	}
	return ctx, key, s
}

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
	t.Parallel()
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
