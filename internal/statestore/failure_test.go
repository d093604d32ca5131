package statestore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
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
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/s3opts"
	"github.com/pocbot/pocbot/internal/sim/objstore"
)

// TestFileWriterDiesMidWrite: a process killed while writing leaves the previous document whole.
func TestFileWriterDiesMidWrite(t *testing.T) {
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
