package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// image buckets (the embedded default)
	"gocloud.dev/blob/s3blob"
	_ "gocloud.dev/blob/s3blob" // s3:// image buckets (Scaleway Object Storage)

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/runnerip"
	"github.com/pocbot/pocbot/internal/s3opts"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/version"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// imageBucketURL turns POC_IMAGE_BUCKET into a gocloud URL and the bucket's Scaleway name: a bare
// name is a bucket of Scaleway Object Storage in the region; a URL is taken as it is.
func imageBucketURL(v, region string) (string, string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", "", errors.New("POC_IMAGE_BUCKET is not set: name the Object Storage bucket that holds the Talos images, e.g. POC_IMAGE_BUCKET=acme-poc-images")
	}
	if !strings.Contains(v, "://") {
		u := fmt.Sprintf("s3://%s?endpoint=https://s3.%s.scw.cloud&region=%s&use_path_style=true", v, region, region)
		return u, v, nil
	}
	p, err := url.Parse(v)
	if err != nil {
		return "", "", fmt.Errorf("POC_IMAGE_BUCKET=%q is not a bucket URL: %w", v, err)
	}
	name := p.Host
	if p.Scheme == "file" {
		parts := strings.Split(strings.TrimRight(p.Path, "/"), "/")
		name = parts[len(parts)-1]
	}
	return v, name, nil
}

// Lock timing variables. The defaults (clusterops: 2 min lease, 10 min wait) suit Actions; a
// shorter lease lets the next run take over sooner from one that was killed (tests, laptops).
const (
	envLockLease = "POC_LOCK_LEASE" // the settings table's lock-lease
	envLockWait  = "POC_LOCK_WAIT"  // the settings table's lock-wait
)

// lockTimesFromEnv reads POC_LOCK_LEASE and POC_LOCK_WAIT (zero: clusterops' default).
func lockTimesFromEnv(getenv func(string) string) (lease, wait time.Duration, err error) {
	for _, v := range []struct {
		env string
		p   *time.Duration
	}{{envLockLease, &lease}, {envLockWait, &wait}} {
		s := strings.TrimSpace(getenv(v.env))
		if s == "" {
			continue
		}
		d, perr := time.ParseDuration(s)
		if perr != nil || d <= 0 {
			return 0, 0, fmt.Errorf("environment variable %s=%q is not a positive duration: use a form like 30s or 2m", v.env, s)
		}
		*v.p = d
	}
	return lease, wait, nil
}

// lockFlags documents and overrides the lock timing on the commands that take the lock.
type lockFlags struct{ lease, wait time.Duration }

func (l *lockFlags) define(e *envFlags) {
	e.Setting(&l.lease, "lock-lease")
	e.Setting(&l.wait, "lock-wait")
}

func (l *lockFlags) apply(o *clusterops.Ops) {
	if l.lease > 0 {
		o.LockLease = l.lease
	}
	if l.wait > 0 {
		o.LockWait = l.wait
	}
}

// open opens the world of a command on one cluster (up, down) with these lock settings, and the
// operator's intent of verb on the cluster.
func (l *lockFlags) open(ctx context.Context, a *app, name, verb string, override func(*provision.Spec)) (*opsWorld, clusterops.Intent, error) {
	w, err := a.openWorld(ctx)
	if err != nil {
		return nil, clusterops.Intent{}, err
	}
	l.apply(w.ops)
	return w, a.intent(name, verb, w, override), nil
}

// opsWorld is what the operator commands need, opened once per process from the app's
// environment (the same code path as `bot handle`).
type opsWorld struct {
	ops        *clusterops.Ops
	store      *statestore.Store
	driver     *scaleway.Driver
	quoter     *cost.Quoter
	eta        *eta.Book
	bucketName string
	close      func()
}

func (w *opsWorld) Close() { w.close() }

func (a *app) openWorld(ctx context.Context) (*opsWorld, error) {
	b, drv, err := openBackendParts(ctx, a.getenv, a)
	if err != nil {
		return nil, err
	}
	return &opsWorld{ops: b.Ops, store: b.Ops.Store, driver: drv, quoter: b.Ops.Quoter, eta: b.ETA, bucketName: b.Spec.ImageBucket, close: b.Close}, nil
}

// openStore opens the state store alone (commands that touch no cloud API).
func (a *app) openStore(ctx context.Context) (*statestore.Store, error) {
	return openStore(ctx, a.getenv, a, &a.atExit)
}

// clusterOps checks --cluster and opens the store for a command that reads one cluster's state
// and touches no cloud API (status, cost, kubeconfig, state show); close releases the store.
func (a *app) clusterOps(ctx context.Context, name string) (ops *clusterops.Ops, close func(), err error) {
	if err := requireCluster(name); err != nil {
		return nil, nil, err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &clusterops.Ops{Store: s, Log: a.log}, func() { _ = s.Close() }, nil
}

// openStoreNoKey opens the store for what needs no key (listing headers, unlocking): without
// POC_STATE_KEY, a throwaway keeper stands in, and anything that would decrypt fails as a wrong key.
func (a *app) openStoreNoKey(ctx context.Context) (*statestore.Store, error) {
	if strings.TrimSpace(a.getenv(statestore.EnvStateKey)) != "" {
		return a.openStore(ctx)
	}
	key, err := statestore.NewKeyURL()
	if err != nil {
		return nil, err
	}
	getenv := func(name string) string {
		if name == statestore.EnvStateKey {
			return key
		}
		return a.getenv(name)
	}
	return openStore(ctx, getenv, a, &a.atExit)
}

// openStore opens POC_STATE_URL with POC_STATE_KEY; an s3:// bucket is opened with static
// credentials from getenv (see openS3), whose closer is appended to closers.
func openStore(ctx context.Context, getenv func(string) string, a *app, closers *[]func()) (*statestore.Store, error) {
	scfg, err := statestore.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	opts := []statestore.Option{statestore.WithLogger(a.log)}
	var sb *blob.Bucket
	if strings.HasPrefix(scfg.StateURL, "s3://") {
		if sb, err = openS3(ctx, scfg.StateURL, getenv); err != nil {
			return nil, fmt.Errorf("open the state bucket %s: %w", statestore.EnvStateURL, err)
		}
		opts = append(opts, statestore.WithBucket(sb))
	}
	pb, err := openPresign(ctx, scfg.StateURL, getenv)
	if err != nil {
		if sb != nil {
			_ = sb.Close()
		}
		return nil, err
	}
	if pb != nil {
		opts = append(opts, statestore.WithPresignBucket(pb))
	}
	store, err := statestore.Open(ctx, scfg, opts...)
	if err != nil {
		for _, b := range []*blob.Bucket{sb, pb} {
			if b != nil {
				_ = b.Close()
			}
		}
		return nil, err
	}
	for _, b := range []*blob.Bucket{sb, pb} {
		if b != nil {
			*closers = append(*closers, func() { _ = b.Close() })
		}
	}
	return store, nil
}

// Presigning credential: the access key id of whoever signs a link is in the link
// (X-Amz-Credential), and kubeconfig links are posted in public comments and step outputs. A
// separate key that may only read public/ (docs/install.md gives its bucket policy) keeps the main
// key's id out of them.
const (
	envPresignAccessKey = "POC_PRESIGN_ACCESS_KEY"
	envPresignSecretKey = "POC_PRESIGN_SECRET_KEY"
)

// openPresign opens the state bucket again with the presigning credential, when one is set
// (nil, nil when not, or when the state is not in S3: file:// links are not signed).
func openPresign(ctx context.Context, stateURL string, getenv func(string) string) (*blob.Bucket, error) {
	ak, sk := strings.TrimSpace(getenv(envPresignAccessKey)), strings.TrimSpace(getenv(envPresignSecretKey))
	switch {
	case ak == "" && sk == "":
		return nil, nil
	case ak == "" || sk == "":
		return nil, fmt.Errorf("%s and %s go together: set both (the read-only key that signs kubeconfig links) or neither", envPresignAccessKey, envPresignSecretKey)
	case !strings.HasPrefix(stateURL, "s3://"):
		return nil, nil
	}
	b, err := openS3(ctx, stateURL, func(k string) string {
		switch k {
		case "AWS_ACCESS_KEY_ID":
			return ak
		case "AWS_SECRET_ACCESS_KEY":
			return sk
		}
		return getenv(k)
	})
	if err != nil {
		return nil, fmt.Errorf("open the state bucket with %s: %w", envPresignAccessKey, err)
	}
	return b, nil
}

// openBackend opens the state store, the Scaleway client, the image bucket and the price
// sources from getenv alone (wiring.go's openWorld reads some settings from the process
// environment, which `bot demo` must not change).
func openBackend(ctx context.Context, getenv func(string) string, a *app) (*chatops.Backend, error) {
	b, _, err := openBackendParts(ctx, getenv, a)
	return b, err
}

// openBackendParts is openBackend plus the Scaleway driver (the reaper's orphan inventory).
func openBackendParts(ctx context.Context, getenv func(string) string, a *app) (b *chatops.Backend, drv *scaleway.Driver, err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	region := cmpOr(getenv("SCW_DEFAULT_REGION"), provision.DefaultSpec().Region)

	store, err := openStore(ctx, getenv, a, &closers)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = store.Close() })
	// Locks and conditional writes are what keep two runs from overwriting each other's state:
	// a bucket that ignores them is refused before anything is created.
	if err := store.CheckBackend(ctx); err != nil {
		return nil, nil, err
	}

	client, err := scwClient(getenv)
	if err != nil {
		return nil, nil, err
	}
	driver, err := scaleway.New(scaleway.Config{Client: client})
	if err != nil {
		return nil, nil, err
	}
	ib, bucketName, err := openImageBucket(ctx, getenv, region)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = ib.Close() })
	rescuePort := 22
	if v := getenv("POC_RESCUE_SSH_PORT"); v != "" {
		if rescuePort, err = strconv.Atoi(v); err != nil {
			return nil, nil, fmt.Errorf("POC_RESCUE_SSH_PORT=%q is not a port number", v)
		}
	}
	poll := provision.DefaultPollInterval
	if v := getenv("POC_POLL_INTERVAL"); v != "" {
		if poll, err = time.ParseDuration(v); err != nil || poll <= 0 {
			return nil, nil, fmt.Errorf("POC_POLL_INTERVAL=%q is not a positive duration like 2s", v)
		}
	}
	lease, lockWait, err := lockTimesFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	factory := images.FactoryBaseURL(getenv)
	runnerCIDR := detectRunner(ctx, getenv, a)
	ccfg := cluster.Config{Driver: driver, FactoryURL: factory, ImageBucket: ib, RescuePort: rescuePort,
		RunnerCIDR: runnerCIDR, Log: a.log,
		// Only the clusters of this state bucket share its pool of parked workers.
		Pool: &poolstore.Pool{Store: store, Now: a.now}, Now: a.now,
		// A paused cluster's etcd snapshot: an encrypted streamed artifact of the state bucket.
		Snapshots: clusterops.Snapshots{Store: store}}
	spec := provision.DefaultSpec()
	spec.ImageBucket = bucketName
	ops := &clusterops.Ops{
		Store: store,
		Build: func(g *provision.Graph, s provision.Spec) error { return cluster.Build(g, s, ccfg) },
		BuildPause: func(g *provision.Graph, s provision.Spec, release bool) error {
			return cluster.BuildPause(g, s, ccfg, release)
		},
		Engine:    provision.Options{PollInterval: poll, Logger: a.log},
		Log:       a.log,
		Now:       a.now,
		LockLease: lease,
		LockWait:  lockWait,
		// A status from outside admin_cidrs says that the security group is why it cannot connect.
		RunnerCIDR: runnerCIDR,
		Quoter:     cost.NewQuoter(cost.APISources(client)...),
		Pool:       &poolstore.Pool{Store: store, Now: a.now},
	}
	ccfg.ImageLocker = ops // the Build closure sees it: clusters making one image take turns
	// Before anything is created, an up is weighed against the organization's quotas and the
	// stock of its worker offers, each candidate priced (worker_offers).
	ops.Preflight = cluster.Preflight(ccfg, func(ctx context.Context, s provision.Spec) (int64, error) {
		q, err := clusterops.Quote(ctx, ops.Quoter, s, 24*time.Hour, false)
		return q.Daily.Nanos, err
	})
	// The ETA: this project's past ups (the state bucket), else the latency profile — the
	// recorded Scaleway latencies and the hosts' figures the emulated world also plays.
	book := &eta.Book{Store: store, Build: ops.Build, Profile: cluster.DefaultWaits(),
		SharedImage: driver.SharedSnapshot}
	return &chatops.Backend{Ops: ops, Spec: spec, Close: closeAll, ETA: book}, driver, nil
}

// detectRunner is POC_RUNNER_CIDR, or else the address the echo endpoint (POC_RUNNER_ECHO_URL)
// sees this process come from. A detection that fails is logged with what to set, and the run goes
// on without a runner address, as before detection existed: admin_cidrs that cover the runner
// (the default 0.0.0.0/0) need none.
func detectRunner(ctx context.Context, getenv func(string) string, a *app) string {
	if v := strings.TrimSpace(getenv("POC_RUNNER_CIDR")); v != "" {
		return v
	}
	cidr, err := runnerip.Detect(ctx, nil, cmpOr(getenv("POC_RUNNER_ECHO_URL"), settings.DefaultRunnerEchoURL))
	if err != nil {
		a.log.Warn("runner address unknown: admin_cidrs that leave it out will lock this run out", "err", err)
		return ""
	}
	a.log.Info("runner address detected", "cidr", cidr)
	return cidr
}

func cmpOr(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

// scwClient builds the Scaleway client from getenv's SCW_* variables, with a transport that
// retries 429 (honouring Retry-After) and, for requests safe to repeat, 5xx. A POST answered 5xx is
// not repeated: it may have taken effect, so the node looks its resource up by tag first.
func scwClient(getenv func(string) string) (*scw.Client, error) {
	ak, sk := strings.TrimSpace(getenv("SCW_ACCESS_KEY")), strings.TrimSpace(getenv("SCW_SECRET_KEY"))
	if ak == "" || sk == "" {
		return nil, errors.New("SCW_ACCESS_KEY and SCW_SECRET_KEY are not set: give the bot's Scaleway API key (IAM application)")
	}
	opts := []scw.ClientOption{
		scw.WithHTTPClient(&http.Client{Transport: &scaleway.RetryTransport{Base: http.DefaultTransport}, Timeout: 2 * time.Minute}),
		scw.WithAuth(ak, sk),
		scw.WithUserAgent(version.UserAgent()),
		scw.WithDefaultZone(scw.Zone(cmpOr(getenv("SCW_DEFAULT_ZONE"), provision.DefaultSpec().Zone))),
		scw.WithDefaultRegion(scw.Region(cmpOr(getenv("SCW_DEFAULT_REGION"), provision.DefaultSpec().Region))),
	}
	if v := strings.TrimSpace(getenv("SCW_API_URL")); v != "" {
		opts = append(opts, scw.WithAPIURL(v))
	}
	if v := strings.TrimSpace(getenv("SCW_DEFAULT_PROJECT_ID")); v != "" {
		opts = append(opts, scw.WithDefaultProjectID(v))
	}
	if v := strings.TrimSpace(getenv("SCW_DEFAULT_ORGANIZATION_ID")); v != "" {
		opts = append(opts, scw.WithDefaultOrganizationID(v))
	}
	c, err := scw.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("scaleway client from SCW_* variables: %w", err)
	}
	return c, nil
}

// openImageBucket opens POC_IMAGE_BUCKET and returns it with its Scaleway name.
func openImageBucket(ctx context.Context, getenv func(string) string, region string) (*blob.Bucket, string, error) {
	u, name, err := imageBucketURL(getenv("POC_IMAGE_BUCKET"), region)
	if err != nil {
		return nil, "", err
	}
	var b *blob.Bucket
	if strings.HasPrefix(u, "s3://") {
		b, err = openS3(ctx, u, getenv)
	} else {
		b, err = blob.OpenBucket(ctx, u)
	}
	if err != nil {
		return nil, "", fmt.Errorf("open the image bucket POC_IMAGE_BUCKET=%q: %w", u, err)
	}
	return b, name, nil
}

// s3ResponseHeaderTimeout bounds the wait for an Object Storage answer's headers once the request
// is sent (an upload's part counts from its last byte). The SDK's default client has no such bound
// (aws-sdk-go-v2 aws/transport/http/client.go sets dial, TLS and idle timeouts only), so a stalled
// answer held a run until its job's timeout with the cluster's lock taken; a timeout is retried by
// the SDK's standard retryer (aws/retry/retryable_error.go: timeout errors are retryable). Two
// minutes leaves room for a multipart upload's completion, which answers only when it is done.
const s3ResponseHeaderTimeout = 2 * time.Minute

// openS3 opens an s3:// bucket URL (endpoint, region, use_path_style in its query) with static
// credentials from getenv: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else the Scaleway keys, which
// Scaleway Object Storage accepts.
func openS3(ctx context.Context, raw string, getenv func(string) string) (*blob.Bucket, error) {
	return openS3Within(ctx, raw, getenv, s3ResponseHeaderTimeout)
}

// openS3Within is openS3 with the wait for a response's headers as a parameter (the tests shorten it).
func openS3Within(ctx context.Context, raw string, getenv func(string) string, headerTimeout time.Duration) (*blob.Bucket, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%q is not an s3://BUCKET URL", raw)
	}
	q := u.Query()
	ak, sk := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if ak == "" {
		ak, sk = getenv("SCW_ACCESS_KEY"), getenv("SCW_SECRET_KEY")
	}
	if ak == "" || sk == "" {
		return nil, errors.New("no Object Storage credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or SCW_ACCESS_KEY/SCW_SECRET_KEY")
	}
	o := s3.Options{
		Region:       cmpOr(q.Get("region"), "fr-par"),
		UsePathStyle: q.Get("use_path_style") == "true",
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.ResponseHeaderTimeout = headerTimeout
		}),
	}
	s3opts.Client(&o) // the checksum choice, and below the same for the upload manager
	if ep := q.Get("endpoint"); ep != "" {
		o.BaseEndpoint = aws.String(ep)
	}
	o.EndpointResolverV2 = newCachedEndpoints(s3.NewDefaultEndpointResolverV2())
	// The SDK writes its own User-Agent; pocbot/<version> is added to it as a product token.
	o.APIOptions = append(o.APIOptions, awsmiddleware.AddUserAgentKeyValue(version.Product, version.String()))
	return s3blob.OpenBucket(ctx, s3.New(o), u.Host, s3opts.Blob())
}
