package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/s3opts"
)

// Region is the region every bucket of the stand-in claims to be in (Scaleway's fr-par).
const Region = "fr-par"

// InstallHint is the command that installs the versitygw binary the stand-in runs.
const InstallHint = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// ErrNoVersity reports that the versitygw binary is not on PATH.
var ErrNoVersity = errors.New("versitygw not found on PATH; install it with: " + InstallHint)

// startTimeout bounds how long StartVersity waits for the server to answer.
const startTimeout = 20 * time.Second

// Server is one running versitygw process serving a posix directory over S3, behind the dialect
// proxy that makes it answer as Scaleway does (see the contract table in doc.go).
type Server struct {
	Endpoint  string // http(s)://127.0.0.1:PORT, the dialect proxy
	AccessKey string
	SecretKey string
	Dir       string // the posix root; each bucket is a sub-directory

	versity string // http://127.0.0.1:PORT of versitygw itself
	dialect *dialect
	proxy   *http.Server
	pool    *x509.CertPool // trusts the proxy's certificate (TLS only)

	cmd    *exec.Cmd
	done   chan struct{}
	output *bytes.Buffer
	outMu  *sync.Mutex
	client *s3.Client
	closed sync.Once
	err    error
}

// LookVersity returns the path of the versitygw binary or ErrNoVersity.
func LookVersity() (string, error) {
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoVersity, err)
	}
	return p, nil
}

// lockedBuffer collects the child's output so a failed start can say why.
type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (b lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 { // keep the head: the reason a server fails is printed first
		return len(p), nil
	}
	return b.buf.Write(p)
}

// StartVersity starts versitygw on a free 127.0.0.1 port serving dir, with random credentials,
// behind the Scaleway dialect (StartVersityWith's zero Options), and returns once it answers S3
// requests. The caller must Close it.
func StartVersity(ctx context.Context, dir string) (*Server, error) {
	return StartVersityWith(ctx, dir, Options{})
}

// StartVersityWith is StartVersity in the dialect opts chooses.
func StartVersityWith(ctx context.Context, dir string, opts Options) (*Server, error) {
	bin, err := LookVersity()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start versitygw: resolve dir %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("start versitygw: create dir %q: %w", abs, err)
	}
	// Picking a port and handing it to a child is racy (another process may take it in
	// between); a few attempts make that harmless.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := startOnce(ctx, bin, abs)
		if err == nil {
			if err = s.startDialect(opts); err == nil {
				return s, nil
			}
			_ = s.Close()
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func startOnce(ctx context.Context, bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		versity:   "http://127.0.0.1:" + strconv.Itoa(port),
		AccessKey: "AK" + randHex(9),
		SecretKey: randHex(20),
		Dir:       dir,
		done:      make(chan struct{}),
		output:    &bytes.Buffer{},
		outMu:     &sync.Mutex{},
	}
	// Not exec.CommandContext: the server must outlive the start context; Close ends it.
	// --region must match the region clients sign with, or every request is a 400.
	s.cmd = exec.Command(bin, "--port", "127.0.0.1:"+strconv.Itoa(port), "--region", Region, "--quiet",
		"--access", s.AccessKey, "--secret", s.SecretKey, "--iam-dir", dir+".iam", "posix", "--versioning-dir", dir+".versions", dir)
	// Credentials go on the command line as the brief's tool usage shows; keep them out of the
	// environment the child would otherwise inherit from a developer's shell.
	s.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
	lb := lockedBuffer{mu: s.outMu, buf: s.output}
	s.cmd.Stdout, s.cmd.Stderr = lb, lb
	if err := os.MkdirAll(dir+".iam", 0o700); err != nil {
		return nil, fmt.Errorf("start versitygw: create its IAM dir: %w", err)
	}
	if err := os.MkdirAll(dir+".versions", 0o700); err != nil {
		return nil, fmt.Errorf("start versitygw: create its versioning dir: %w", err)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	s.client = newClient(s.versity, s.AccessKey, s.SecretKey, nil)

	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, rcancel := context.WithTimeout(wctx, 2*time.Second)
		_, err := s.client.ListBuckets(rctx, &s3.ListBucketsInput{})
		rcancel()
		if err == nil {
			slog.Debug("versitygw ready", "endpoint", s.versity, "dir", dir)
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("versitygw on %s exited before answering (%v): %s", s.versity, s.err, s.Output())
		case <-wctx.Done():
			_ = s.Close()
			return nil, fmt.Errorf("versitygw on %s did not answer within %s (last error: %v): %s", s.versity, startTimeout, err, s.Output())
		case <-tick.C:
		}
	}
}

// startDialect puts the dialect proxy in front of versitygw and points Endpoint and the Server's
// client at it.
func (s *Server) startDialect(opts Options) error {
	u, err := url.Parse(s.versity)
	if err != nil {
		return err
	}
	s.dialect = &dialect{opts: opts, backend: u, root: s.AccessKey, admin: s.client, iam: map[string]Access{}, lifecycle: map[string][]byte{},
		roles: map[string]string{}, account: s.admin}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start the S3 dialect proxy: listen on loopback: %w", err)
	}
	scheme := "http"
	s.proxy = &http.Server{Handler: s.dialect, ReadHeaderTimeout: 10 * time.Second}
	if opts.TLS {
		cert, pool, err := selfSigned()
		if err != nil {
			l.Close()
			return fmt.Errorf("start the S3 dialect proxy: make a certificate: %w", err)
		}
		s.pool, scheme = pool, "https"
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	go func() { _ = s.proxy.Serve(l) }()
	s.Endpoint = scheme + "://" + l.Addr().String()
	s.client = newClient(s.Endpoint, s.AccessKey, s.SecretKey, s.pool)
	return nil
}

// GrantIAM sets what the IAM policy of an access key allows on Object Storage (Scaleway grants
// a request only what IAM and the bucket policy both allow). Keys added by AddUser start with
// AccessNone; the root key has everything.
func (s *Server) GrantIAM(access string, a Access) {
	s.dialect.mu.Lock()
	defer s.dialect.mu.Unlock()
	s.dialect.iam[access] = a
}

// Observe calls f with the method, path and headers of every request the endpoint receives,
// before it is answered (nil stops it).
func (s *Server) Observe(f func(method, path string, h http.Header)) {
	s.dialect.mu.Lock()
	defer s.dialect.mu.Unlock()
	s.dialect.observe = f
}

// HTTPClient is an HTTP client that trusts the endpoint (its self-signed certificate under TLS).
func (s *Server) HTTPClient() *http.Client {
	if s.pool == nil {
		return &http.Client{Timeout: 30 * time.Second}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12}}}
}

// Output returns what the server printed so far (for failure messages).
func (s *Server) Output() string {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return s.output.String()
}

// Client returns an S3 client with the server's static credentials.
func (s *Server) Client() *s3.Client { return s.client }

// CreateBucket creates a bucket through the S3 API.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		return fmt.Errorf("create bucket %q on %s: %w", name, s.Endpoint, err)
	}
	return nil
}

// BucketURL is the gocloud.dev/blob URL of a bucket on this server. Opening it with
// blob.OpenBucket takes the credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (set
// them to AccessKey / SecretKey); OpenBucket needs no environment.
func (s *Server) BucketURL(name string) string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", Region)
	q.Set("use_path_style", "true")
	return "s3://" + name + "?" + q.Encode()
}

// OpenBucket opens a bucket of this server with an explicit client and static credentials.
func (s *Server) OpenBucket(ctx context.Context, name string) (*blob.Bucket, error) {
	b, err := s3blob.OpenBucket(ctx, s.client, name, s3opts.Blob())
	if err != nil {
		return nil, fmt.Errorf("open bucket %q on %s: %w", name, s.Endpoint, err)
	}
	return b, nil
}

// AddUser creates an unprivileged account (role "user": it owns nothing and may do only what a
// bucket policy grants it) with versitygw's admin CLI, signed by the root account.
func (s *Server) AddUser(ctx context.Context, access, secret string) error {
	return s.addUser(ctx, access, secret, "user")
}

// AddProjectKey creates an account that reaches every bucket, as on Scaleway an API key of the
// project reaches the project's buckets by IAM, not by owning them (versitygw's "admin" role);
// what it may do there is then what GrantIAM says. versitygw's admin role is not narrowed by a
// bucket policy: use it for keys IAM lets do everything, on buckets without a policy.
func (s *Server) AddProjectKey(ctx context.Context, access, secret string) error {
	return s.addUser(ctx, access, secret, "admin")
}

func (s *Server) addUser(ctx context.Context, access, secret, role string) error {
	if err := s.admin(ctx, "create-user", "--access", access, "--secret", secret, "--role", role); err != nil {
		return err
	}
	s.dialect.known(access, role)
	return nil
}

// admin runs a command of versitygw's admin CLI (create-user, update-user), signed by the root
// account; the first argument names the command, the others are its flags.
func (s *Server) admin(ctx context.Context, args ...string) error {
	bin, err := LookVersity()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"admin", "--access", s.AccessKey, "--secret", s.SecretKey, "--region", Region,
		"--endpoint-url", s.versity}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("versitygw admin %s on %s: %w: %s", strings.Join(args[:min(len(args), 3)], " "), s.Endpoint, err, out)
	}
	return nil
}

// PutBucketPolicy sets a bucket's policy (JSON) as the root account.
func (s *Server) PutBucketPolicy(ctx context.Context, bucket, policy string) error {
	if _, err := s.client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		return fmt.Errorf("put the policy of bucket %q on %s: %w", bucket, s.Endpoint, err)
	}
	return nil
}

// OpenBucketAs opens a bucket of this server with another account's static credentials.
func (s *Server) OpenBucketAs(ctx context.Context, name, access, secret string) (*blob.Bucket, error) {
	b, err := s3blob.OpenBucket(ctx, newClient(s.Endpoint, access, secret, s.pool), name, s3opts.Blob())
	if err != nil {
		return nil, fmt.Errorf("open bucket %q on %s as %s: %w", name, s.Endpoint, access, err)
	}
	return b, nil
}

// Close stops the server and waits for it to exit. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closed.Do(func() {
		if s.proxy != nil {
			_ = s.proxy.Close()
		}
		select {
		case <-s.done:
			return
		default:
		}
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
				err = fmt.Errorf("versitygw pid %d on %s did not exit after SIGKILL", s.cmd.Process.Pid, s.Endpoint)
			}
		}
	})
	return err
}

func newClient(endpoint, ak, sk string, pool *x509.CertPool) *s3.Client {
	o := s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
	}
	s3opts.Client(&o)
	if pool != nil {
		o.HTTPClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	return s3.New(o)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
