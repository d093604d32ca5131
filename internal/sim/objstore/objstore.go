// Package objstore runs a real S3 server (versitygw, posix backend) on a loopback port so that
// tests and `bot sim` talk to Object Storage through the same client libraries as production
// (aws-sdk-go-v2 via gocloud.dev/blob/s3blob), including conditional writes (If-None-Match,
// If-Match), which the state store depends on.
//
// The server runs versitygw's internal IAM (--iam-dir, beside the posix root, never inside it), so
// that a test can add a second, unprivileged account (AddUser) and restrict it with a bucket policy
// (PutBucketPolicy), as an operator does on Scaleway for the presigning credential. Sources:
// versitygw cmd/versitygw/main.go (--iam-dir, the admin API on the S3 port when no --admin-port),
// cmd/internal/gwcli/admin.go (`admin create-user`, roles admin/user/userplus),
// auth/bucket_policy_principals.go (a principal is {"AWS": [access key ids]} or "*"); Scaleway's
// own principal syntax ({"SCW": "application_id:<id>"}) differs only there, see docs/install.md.
package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// Region is the region every bucket of the stand-in claims to be in (Scaleway's fr-par).
const Region = "fr-par"

// InstallHint is the command that installs the versitygw binary the stand-in runs.
const InstallHint = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// ErrNoVersity reports that the versitygw binary is not on PATH.
var ErrNoVersity = errors.New("versitygw not found on PATH; install it with: " + InstallHint)

// startTimeout bounds how long StartVersity waits for the server to answer.
const startTimeout = 20 * time.Second

// Server is one running versitygw process serving a posix directory over S3.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Dir       string // the posix root; each bucket is a sub-directory

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
// and returns once it answers S3 requests. The caller must Close it.
func StartVersity(ctx context.Context, dir string) (*Server, error) {
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
			return s, nil
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
		Endpoint:  "http://127.0.0.1:" + strconv.Itoa(port),
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
		"--access", s.AccessKey, "--secret", s.SecretKey, "--iam-dir", dir+".iam", "posix", dir)
	// Credentials go on the command line as the brief's tool usage shows; keep them out of the
	// environment the child would otherwise inherit from a developer's shell.
	s.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
	lb := lockedBuffer{mu: s.outMu, buf: s.output}
	s.cmd.Stdout, s.cmd.Stderr = lb, lb
	if err := os.MkdirAll(dir+".iam", 0o700); err != nil {
		return nil, fmt.Errorf("start versitygw: create its IAM dir: %w", err)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	s.client = newClient(s.Endpoint, s.AccessKey, s.SecretKey)

	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, rcancel := context.WithTimeout(wctx, 2*time.Second)
		_, err := s.client.ListBuckets(rctx, &s3.ListBucketsInput{})
		rcancel()
		if err == nil {
			slog.Debug("versitygw ready", "endpoint", s.Endpoint, "dir", dir)
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("versitygw on %s exited before answering (%v): %s", s.Endpoint, s.err, s.Output())
		case <-wctx.Done():
			_ = s.Close()
			return nil, fmt.Errorf("versitygw on %s did not answer within %s (last error: %v): %s", s.Endpoint, startTimeout, err, s.Output())
		case <-tick.C:
		}
	}
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
	b, err := s3blob.OpenBucket(ctx, s.client, name, nil)
	if err != nil {
		return nil, fmt.Errorf("open bucket %q on %s: %w", name, s.Endpoint, err)
	}
	return b, nil
}

// AddUser creates an unprivileged account (role "user": it owns nothing and may do only what a
// bucket policy grants it) with versitygw's admin CLI, signed by the root account.
func (s *Server) AddUser(ctx context.Context, access, secret string) error {
	bin, err := LookVersity()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "admin", "--access", s.AccessKey, "--secret", s.SecretKey, "--region", Region,
		"--endpoint-url", s.Endpoint, "create-user", "--access", access, "--secret", secret, "--role", "user")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("versitygw admin create-user %s on %s: %w: %s", access, s.Endpoint, err, out)
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
	b, err := s3blob.OpenBucket(ctx, newClient(s.Endpoint, access, secret), name, nil)
	if err != nil {
		return nil, fmt.Errorf("open bucket %q on %s as %s: %w", name, s.Endpoint, access, err)
	}
	return b, nil
}

// Close stops the server and waits for it to exit. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closed.Do(func() {
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

func newClient(endpoint, ak, sk string) *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		// S3-compatible servers other than AWS expect no flexible-checksum trailers.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
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
