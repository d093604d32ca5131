// Package world starts the whole emulated outside on loopback, for `bot sim`, `bot demo` and the
// end-to-end tests: the Scaleway API emulator (with the product catalog), the Image Factory, an
// Object Storage bucket (a real S3 server, versitygw, when installed; a file-backed bucket
// otherwise), the GitHub API, and the hosts the emulator hands out: a Talos node on every control
// plane once it runs, and on the worker a rescue SSH host (rescue boot) or a Talos node in
// maintenance mode (normal boot after the image was written). A Talos node boots for a while
// (TalosBoot, scaled) before its API answers, reads the control plane's user data only then, and
// refuses Bootstrap until its container runtime and time sync are up (TalosCRI, TalosTimeSync).
//
// The world only starts the stand-ins and connects them to each other; each stand-in lives in its
// own package under internal/sim. The bot's side is opened from the world's environment (Env) by
// production's constructor, internal/wiring (worldtest does it for tests).
//
// # Network policy
//
// Every connection to a Talos node of the world passes two gates, in this order: the network in
// front of the node (the Scaleway security group of the Instance holding the address, read from
// the emulator at the moment of the connection; none for the Elastic Metal worker) and the node's
// own ingress firewall (the NetworkDefaultActionConfig / NetworkRuleConfig documents of its
// config). A connection that either refuses is reset at accept. Sources are real addresses: the
// Talos stand-ins dial from their node's address (a worker's kubelet to 6443, its trustd request
// to 50001), and the bot dials without binding, so on loopback it arrives from 127.0.0.1 (the
// runner's address in tests: POC_RUNNER_CIDR=127.0.0.1/32). Loopback stands for the public
// network here: Talos's rule that accepts everything on the lo interface is not modelled.
//
//	| behaviour | source |
//	|---|---|
//	| an Instance's security group judges runner → node and node → node connections | Scaleway Instance security groups (sim/scaleway InboundAllowed and its contract) |
//	| the Elastic Metal worker has no security group | Elastic Metal API (no security group: https://www.scaleway.com/en/developers/api/elastic-metal/); docs/seed.md, The cluster |
//	| a node's ingress firewall judges after the group | https://docs.siderolabs.com/talos/v1.13/networking/ingress-firewall; sim/talos firewall contract |
//	| the worker joins over the network from its own address: 6443 (endpoints via Kubernetes) then trustd 50001 on a control plane | siderolabs/talos internal/app/machined/pkg/controllers/secrets/api.go, internal/app/machined/pkg/controllers/k8s/endpoint.go @v1.13.9 |
//	| refused = reset at once, not a dropped SYN (tests fail fast instead of waiting for a timeout) | simplification: a real group or firewall drops silently |
//	| every node is on its own L3 segment behind a gateway: an Instance's public address is its /32, the Elastic Metal worker's is in its /24; no two nodes share an L2 segment, so Cilium's native routing with auto direct node routes cannot reach another node's pods | https://www.scaleway.com/en/docs/instances/concepts/#routed-ip (an Instance's routed IP, reached through Scaleway's gateway); Elastic Metal: source silent on sharing a segment with Instances, the stricter reading (never) |
//
// # IAM API keys on Object Storage
//
// With versitygw buckets, every API key of the Scaleway stand-in's IAM (`bot init --iam` makes the
// bot's and the presigner's) is accepted by the S3 stand-in, as Scaleway accepts an IAM API key on
// Object Storage; sources are scaleway/docs-content pages:
//
//	| behaviour | source |
//	|---|---|
//	| an API key reaches the buckets of its preferred project (default_project_id) only; the world's buckets are all in ProjectID, so a key preferring another project is refused | pages/iam/api-cli/using-api-key-object-storage.mdx ("This API key will always use this Project when carrying out Object Storage actions"); refused rather than answered from an empty project: the stricter reading |
//	| it may do there what its application's policies grant on that project: ObjectStorageFullAccess or AllProductsFullAccess everything; ObjectStorageObjectsRead, ObjectStorageReadOnly or AllProductsReadOnly GET and HEAD; any other set, or none, nothing. A bucket policy does not narrow these keys here (objstore.ResolveKeys), Scaleway's would | pages/iam/how-to/create-api-keys.mdx (a key inherits its bearer's permissions); pages/object-storage/api-cli/combining-iam-and-object-storage.mdx (IAM first, then the bucket policy); pages/iam/reference-content/permission-sets.mdx; the partial sets (ObjectStorageObjectsWrite, ObjectStorageBucketsRead/Write): not modelled, no access (the stricter reading) |
//	| a policy changed or a key deleted in IAM takes effect at the next request; an unknown or deleted key is refused with InvalidAccessKeyId | IAM is consulted per request (combining-iam-and-object-storage.mdx); the error code: AWS S3's for an unknown key, Scaleway source silent |
//
// Rules scoped to the organization (organization_id) grant nothing on Object Storage here: its
// permission sets are scoped by project (permission-sets.mdx, "Scoped by Project").
//
// # The assumptions register
//
// Options.Readings choose, row by row of internal/assume, how every stand-in answers where no
// source settles it: the Scaleway emulator's rows, the S3 dialect's (objstore.Options.WithReadings),
// the factory's (schematic-id), GitHub's (token-format, compare-base), the bot key's organization-scoped rule
// (quota-read) and a registry on the emulator's listener (node-egress: GET /v2/ answers 401 with a
// Bearer challenge, as a registry wanting a token; blocked: the connection fails, and every Talos
// node's Cilium agent waits ImagePullBackOff, never ready: talossim.NodeOptions.ImagePullBlocked).
package world

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/runnerip"
	"github.com/pocbot/pocbot/internal/sim/catalog"
	"github.com/pocbot/pocbot/internal/sim/cnichart"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/imagefactory"
	"github.com/pocbot/pocbot/internal/sim/loopback"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	rescuesim "github.com/pocbot/pocbot/internal/sim/rescue"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	talossim "github.com/pocbot/pocbot/internal/sim/talos"
)

// Fixed identities of the emulated Scaleway account (any UUID-shaped value works).
const (
	ProjectID      = "11111111-2222-4333-8444-555555555555"
	OrganizationID = "11111111-2222-4333-8444-666666666666"
	OwnerUserID    = "11111111-2222-4333-8444-777777777777"
	ImageBucket    = "pocbot-images"
	StateBucket    = "pocbot-state"
	Region         = "fr-par"
)

// Options shape the world.
type Options struct {
	// Dir holds the buckets, the disks and the keys; it must exist.
	Dir string
	// TimeFactor scales the latencies of docs/seed.md, Latencies (default 0.02: a 15-minute Elastic Metal chain takes 18 s).
	TimeFactor float64
	// Faults, Quotas and Stock go to the Scaleway emulator.
	Faults scwsim.Faults
	Quotas map[string]int
	// OrgQuotas are the organization's quotas by name (scwsim.DocumentedQuotas: Scaleway's
	// defaults); nil is an organization whose quotas were raised to 1000 each
	// (scwsim.RaisedQuotas), room for the many clusters of a test or a soak.
	OrgQuotas map[string]int
	Stock     map[string]int
	// S3 chooses the bucket backend: "auto" (versitygw when installed), "versitygw", "file".
	S3 string
	// S3Dialect is how the versitygw stand-in answers (zero: Scaleway's, conditional deletes
	// ignored); Readings override the rows they name (objstore.Options.WithReadings).
	S3Dialect objstore.Options
	// RescuePort is the worker's rescue SSH port (port 22 is not assumed; default 2222).
	RescuePort int
	// RescueSudoNoPassword gives the rescue user a passwordless sudo; otherwise sudo wants the
	// rescue password, as on Scaleway's rescue image. RescueServerDelay and HideRescueServer go
	// to the emulator: rescue_server shown late, or never.
	RescueSudoNoPassword bool
	RescueServerDelay    time.Duration
	HideRescueServer     bool
	// Hosts is the profile of the hosts' own transitions (Talos boot, apply, bootstrap, reset;
	// the rescue image write), scaled by TimeFactor like the emulator's. Zero: instant, as the
	// tests that do not measure time want. DefaultHosts is the estimate profile.
	Hosts Hosts
	// TalosFaults, when set, are shared by every Talos node of the world (talossim.Faults).
	TalosFaults *talossim.Faults
	// QCOW2Size and RawSize size the factory's images (defaults: 16 MiB each).
	QCOW2Size, RawSize int64
	// GitHubLimit is the GitHub stand-in's secondary limit on content creation; the zero value is
	// GitHub's, at real scale whatever TimeFactor. A harness that plays a day's schedule of
	// commands in a minute (the soak) sends what no real schedule could in real time: it may
	// turn the limit off, and say so.
	GitHubLimit ghsim.ContentLimit
	// TalosBootFor, when set, gives the boot time of the Talos node on a server (by its name)
	// before TimeFactor scales it; default TalosBoot for every server. Tests slow one node down.
	TalosBootFor func(serverName string) time.Duration
	// IPBase is the first address the emulator hands out; default: the base of a 127.X.0.0/16
	// claimed from package loopback for the world's life, so that two worlds on one machine
	// (parallel tests, parallel test packages, a demo) never listen on the same address.
	IPBase string
	// Log receives the world's and its hosts' events; default: errors only, on stderr.
	Log *slog.Logger
	// Readings choose, row by row of the assumptions register (internal/assume), how the
	// stand-ins answer where no source settles it; a row not named plays its default.
	Readings assume.Readings
}

// Hosts is the part of the whole cluster's latency profile the hosts play (the Scaleway part is
// the emulator's, internal/sim/scaleway/latency.go).
type Hosts struct {
	Talos talossim.Latency
	// RescueBoot: the API reports the rescue reboot done -> the rescue system's SSH answers
	// (the machine boots the rescue image). The estimate for "reboot to rescue, SSH up"
	// is 3–5 min (docs/seed.md, Latencies); the recordings time the API's status only. Default 3 min.
	RescueBoot time.Duration
	// ImageWrite: the metal image streamed and written to the worker's disk from rescue.
	// Estimate 45 s (≈ 1.3 GB raw at ≈ 30 MB/s compressed download, decompressed on the fly).
	ImageWrite time.Duration
}

// DefaultHosts is the estimate profile of the hosts at factor 1. A reset runs its sequence
// (talossim.DefaultLatency's ResetWipe), then reboots the physical machine: the emulator's
// Elastic Metal reboot, then Talos's boot.
func DefaultHosts() Hosts {
	t := talossim.DefaultLatency()
	t.ResetReboot = scwsim.DefaultLatency().BMNormalReboot + TalosBoot
	return Hosts{Talos: t, RescueBoot: 3 * time.Minute, ImageWrite: 45 * time.Second}
}

// Talos node timings before TimeFactor. The Talos source gives no durations; these are estimates
// of a cloud VM's boot to the API, then the container runtime's start and the NTP sync that a
// control plane waits for before it accepts Bootstrap.
const (
	TalosBoot     = 60 * time.Second
	TalosCRI      = 20 * time.Second
	TalosTimeSync = 5 * time.Second
	// TalosVarLib: configured -> /var/lib mounted (EPHEMERAL), before the container runtime
	// starts, which keeps its state there.
	TalosVarLib = 10 * time.Second
)

// World is a running emulated outside.
type World struct {
	opts Options
	log  *slog.Logger

	Scaleway    *scwsim.Emulator
	ScalewayURL string
	// SecretKey and AccessKey are the bot's API key: an IAM key of the application "pocbot",
	// held to the permission sets deploy/iam grants (Env gives them to the bot). AdminSecretKey
	// and AdminAccessKey are the organization owner's, who may do everything (`bot init --iam`,
	// tests that look behind the bot's back).
	SecretKey      string
	AccessKey      string
	AdminSecretKey string
	AdminAccessKey string
	Factory        *imagefactory.Factory
	// CiliumChart is the chart the bot renders for Cilium here (POC_CILIUM_CHART): the
	// project's own test chart (sim/cnichart), served on loopback and pinned by its digest.
	CiliumChart string
	GitHub      *ghsim.Server
	GitHubURL   string
	S3          *objstore.Server // nil with file buckets
	StateURL    string
	StateKey    string
	ImageURL    string // gocloud URL of the image bucket
	AppKeyFile  string

	imageBucket *blob.Bucket
	closers     []func() error

	mu      sync.Mutex
	nodes   map[string]*talossim.Node    // by IP
	rescues map[string]*rescuesim.Server // by IP
	written map[string]bool              // worker disks that received an image, by IP
	gens    map[string]int               // boots and removals by server id (delayed starts)
	hostOf  map[string]string            // the server id whose host listens on an IP, by IP
	closed  bool
	// pullBlocked: the nodes cannot pull the Cilium agent's image (node-egress=blocked, or
	// SetImagePullBlocked).
	pullBlocked atomic.Bool
}

// SetImagePullBlocked blocks (or opens) the nodes' pull of the Cilium agent's image from now on,
// as register row node-egress=blocked does from the start: a test plays the reading in a world
// it shares with others.
func (w *World) SetImagePullBlocked(blocked bool) { w.pullBlocked.Store(blocked) }

// Start brings the world up; Close tears it down. Every service listens before Start returns.
func Start(ctx context.Context, opts Options) (w *World, err error) {
	if opts.Dir == "" {
		return nil, errors.New("world: Options.Dir is required")
	}
	if opts.TimeFactor == 0 {
		opts.TimeFactor = 0.02
	}
	if opts.RescuePort == 0 {
		opts.RescuePort = 2222
	}
	if opts.S3 == "" {
		opts.S3 = "auto"
	}
	if opts.OrgQuotas == nil {
		opts.OrgQuotas = scwsim.RaisedQuotas(1000)
	}
	if opts.Log == nil {
		// Errors only, on stderr: a host that cannot start (its address taken) otherwise shows
		// up only as a node that never answers, minutes later.
		opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	started := &World{opts: opts, log: opts.Log, nodes: map[string]*talossim.Node{},
		rescues: map[string]*rescuesim.Server{}, written: map[string]bool{}, gens: map[string]int{},
		hostOf: map[string]string{}}
	w = started
	w.pullBlocked.Store(opts.Readings.Is(assume.NodeEgress, "blocked"))
	defer func() {
		if err != nil { // w is nil by then (return nil, err): close what was started
			started.Close()
		}
	}()
	if err := w.startBuckets(ctx); err != nil {
		return nil, err
	}
	w.Factory, err = imagefactory.Start(ctx, "127.0.0.1:0", imagefactory.Options{QCOW2Size: opts.QCOW2Size, RawSize: opts.RawSize,
		OtherIDs: opts.Readings.Is(assume.SchematicID, "different")})
	if err != nil {
		return nil, fmt.Errorf("world: image factory: %w", err)
	}
	w.closers = append(w.closers, w.Factory.Close)
	if err := w.startChartServer(); err != nil {
		return nil, err
	}

	w.AccessKey = "SCW" + strings.ToUpper(randomToken(9))[:17]
	w.SecretKey = uuidLike()
	w.AdminAccessKey = "SCW" + strings.ToUpper(randomToken(9))[:17]
	w.AdminSecretKey = uuidLike()
	ipBase := opts.IPBase
	if ipBase == "" {
		// A block no other world on the machine holds: the hosts listen on fixed ports of their
		// addresses, and a shared address joins two worlds (package loopback says how).
		blk, err := loopback.Claim()
		if err != nil {
			return nil, fmt.Errorf("world: %w", err)
		}
		// Released after every host and service closed (closers run last to first).
		w.closers = append([]func() error{blk.Release}, w.closers...)
		ipBase = blk.Base()
	}
	w.Scaleway = scwsim.New(scwsim.Options{
		SecretKey:  w.AdminSecretKey,
		TimeFactor: opts.TimeFactor,
		Quotas:     opts.Quotas,
		OrgQuotas:  opts.OrgQuotas,
		Stock:      opts.Stock,
		Faults:     opts.Faults,
		Objects:    bucketObjects{w: w},
		// The runner's echo endpoint (POC_RUNNER_ECHO_URL) rides on the emulator's listener.
		Extra: map[string]http.Handler{"/product-catalog/": catalog.Handler(), RunnerEchoPath: runnerip.Handler(),
			// The registries the nodes pull from (POC_REGISTRY_PROBE_URLS points there).
			"/v2/": registryHandler(opts.Readings.Is(assume.NodeEgress, "blocked"))},
		IPBase:   ipBase,
		Logger:   opts.Log,
		Readings: opts.Readings,

		RescueServerDelay: opts.RescueServerDelay,
		HideRescueServer:  opts.HideRescueServer,
		Hooks: scwsim.Hooks{
			InstanceRunning: w.instanceRunning,
			InstanceStopped: w.hostGone,
			BaremetalBooted: w.baremetalBooted,
			Deleted:         func(kind, id string) { w.hostGone(id) },
		},
	})
	// The bot's key is an IAM API key of an application whose policy grants what the driver needs
	// (as deploy/iam makes it), so that `bot doctor` can read its permissions.
	w.Scaleway.AddAPIKey(w.AccessKey, w.SecretKey, "pocbot", ProjectID, provscw.PermissionSetNames()...)
	w.Scaleway.AddUserKey(w.AdminAccessKey, w.AdminSecretKey, OwnerUserID, ProjectID)
	if opts.Readings.Is(assume.QuotaRead, "allowed") {
		// The organization-scoped rule `bot init --iam` adds: without it IAM refuses ListQuota.
		w.Scaleway.GrantOrganization(w.AccessKey, "pocbot-organization", OrganizationID, provscw.OrganizationPermissionSetNames()...)
	}
	if w.S3 != nil {
		// Every IAM API key reaches Object Storage, as far as its policy lets it (`bot init --iam`
		// makes the bot's and the presigner's keys in the Scaleway stand-in).
		w.S3.ResolveKeys(w.objectStorageKey)
	}
	u, stop, err := w.Scaleway.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("world: scaleway emulator: %w", err)
	}
	w.ScalewayURL = u
	w.closers = append(w.closers, func() error { stop(); return nil })

	// GitHub's secondary limit on content creation at its documented scale, counted in real time
	// whatever the time factor: a scaled minute would pass runs that GitHub refuses. Installation
	// tokens take the form register row token-format plays.
	tokens := ghsim.TokenStateless
	if opts.Readings.Is(assume.TokenFormat, "classic") {
		tokens = ghsim.TokenClassic
	}
	w.GitHub, err = ghsim.New(ghsim.Options{Logger: opts.Log, ContentLimit: opts.GitHubLimit, TokenFormat: tokens,
		CompareBaseTip: opts.Readings.Is(assume.CompareBase, "base-tip")})
	if err != nil {
		return nil, fmt.Errorf("world: github stand-in: %w", err)
	}
	gu, gstop, err := w.GitHub.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("world: github stand-in: %w", err)
	}
	w.GitHubURL = gu
	w.closers = append(w.closers, func() error { gstop(); return nil })
	w.AppKeyFile, err = w.GitHub.WriteAppKeyFile(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("world: write the App key: %w", err)
	}
	return w, nil
}

func (w *World) startBuckets(ctx context.Context) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	w.StateKey = "base64key://" + base64.URLEncoding.EncodeToString(key)
	useVersity := w.opts.S3 == "versitygw"
	if w.opts.S3 == "auto" {
		_, lookErr := objstore.LookVersity()
		useVersity = lookErr == nil
	}
	if useVersity {
		dir := filepath.Join(w.opts.Dir, "s3")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		s, err := objstore.StartVersityWith(ctx, dir, w.opts.S3Dialect.WithReadings(w.opts.Readings))
		if err != nil {
			return fmt.Errorf("world: start versitygw: %w", err)
		}
		w.S3 = s
		w.closers = append(w.closers, s.Close)
		for _, b := range []string{ImageBucket, StateBucket} {
			if err := s.CreateBucket(ctx, b); err != nil {
				return fmt.Errorf("world: create bucket %s: %w", b, err)
			}
		}
		w.StateURL = s.BucketURL(StateBucket)
		w.ImageURL = s.BucketURL(ImageBucket)
		w.imageBucket, err = s.OpenBucket(ctx, ImageBucket)
		if err != nil {
			return err
		}
	} else {
		for _, b := range []string{ImageBucket, StateBucket} {
			if err := os.MkdirAll(filepath.Join(w.opts.Dir, "buckets", b), 0o700); err != nil {
				return err
			}
		}
		w.StateURL = "file://" + filepath.Join(w.opts.Dir, "buckets", StateBucket)
		w.ImageURL = "file://" + filepath.Join(w.opts.Dir, "buckets", ImageBucket)
		b, err := fileblob.OpenBucket(filepath.Join(w.opts.Dir, "buckets", ImageBucket), nil)
		if err != nil {
			return err
		}
		w.imageBucket = b
	}
	w.closers = append(w.closers, w.imageBucket.Close)
	return nil
}

// objectStorageKey is Scaleway's link from IAM to Object Storage (see "IAM API keys on Object
// Storage" in doc.go): an API key of the Scaleway stand-in reaches the buckets of its preferred
// project, with what its application's policies grant there.
func (w *World) objectStorageKey(accessKey string) (string, objstore.Access, bool) {
	secret, project, sets, ok := w.Scaleway.APIKeyGrants(accessKey)
	if !ok {
		return "", objstore.AccessNone, false
	}
	return secret, objectStorageAccess(project, sets), true
}

// objectStorageAccess is what permission sets granted on project allow on the world's buckets,
// which are all in ProjectID.
func objectStorageAccess(project string, sets []string) objstore.Access {
	if project != ProjectID {
		return objstore.AccessNone // the key's Object Storage requests go to another project
	}
	a := objstore.AccessNone
	for _, set := range sets {
		switch set {
		case "ObjectStorageFullAccess", "AllProductsFullAccess":
			return objstore.AccessFull
		case "ObjectStorageObjectsRead", "ObjectStorageReadOnly", "AllProductsReadOnly":
			a = objstore.AccessObjectsRead
		}
	}
	return a
}

// BucketDir is the directory of a file-backed bucket (worlds without versitygw).
func (w *World) BucketDir(name string) string { return filepath.Join(w.opts.Dir, "buckets", name) }

// Env is the configuration a bot process needs to use this world, in a stable order: its
// Endpoints, then the world's own credentials and buckets (an operator's shell).
func (w *World) Env() [][2]string {
	env := [][2]string{
		{"SCW_ACCESS_KEY", w.AccessKey},
		{"SCW_SECRET_KEY", w.SecretKey},
		{"SCW_DEFAULT_PROJECT_ID", ProjectID},
		{"SCW_DEFAULT_ORGANIZATION_ID", OrganizationID},
		{"POC_STATE_URL", w.StateURL},
		{"POC_STATE_KEY", w.StateKey},
		{"POC_IMAGE_BUCKET", w.ImageURL},
		{"POC_APP_ID", strconv.FormatInt(w.GitHub.AppID(), 10)},
		{"POC_APP_PRIVATE_KEY_FILE", w.AppKeyFile},
	}
	if w.S3 != nil {
		env = append(env, [2]string{"AWS_ACCESS_KEY_ID", w.S3.AccessKey}, [2]string{"AWS_SECRET_ACCESS_KEY", w.S3.SecretKey})
	}
	return append(w.Endpoints(), env...)
}

// Endpoints is where the world's services are, and how fast to poll them: what a run needs beside
// its credentials (production's defaults name the real services).
func (w *World) Endpoints() [][2]string {
	return [][2]string{
		{"SCW_API_URL", w.ScalewayURL},
		{"SCW_DEFAULT_ZONE", "fr-par-1"},
		{"SCW_DEFAULT_REGION", Region},
		{"POC_IMAGE_FACTORY_URL", w.Factory.URL()},
		{"POC_CILIUM_CHART", w.CiliumChart},
		{"POC_POLL_INTERVAL", "100ms"},
		{"POC_RESCUE_SSH_PORT", strconv.Itoa(w.opts.RescuePort)},
		{"POC_RUNNER_CIDR", RunnerCIDR},
		{"POC_RUNNER_ECHO_URL", w.ScalewayURL + RunnerEchoPath},
		{"POC_REGISTRY_PROBE_URLS", w.ScalewayURL},
		{"GITHUB_API_URL", w.GitHubURL},
	}
}

// Close stops every service, hosts first.
func (w *World) Close() error {
	w.mu.Lock()
	w.closed = true
	for ip, n := range w.nodes {
		_ = n.Close()
		delete(w.nodes, ip)
	}
	for ip, r := range w.rescues {
		_ = r.Close()
		delete(w.rescues, ip)
	}
	w.mu.Unlock()
	var errs []error
	for i := len(w.closers) - 1; i >= 0; i-- {
		errs = append(errs, w.closers[i]())
	}
	return errors.Join(errs...)
}

// Nodes returns the addresses of the Talos nodes currently up.
func (w *World) Nodes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for ip := range w.nodes {
		out = append(out, ip)
	}
	return out
}

// instanceRunning boots Talos on a control plane: the scaleway image reads its config from the
// instance's cloud-init user data (cloud mode), or waits in maintenance mode without one.
func (w *World) instanceRunning(ev scwsim.InstanceEvent) {
	if len(ev.PublicIPs) == 0 {
		w.log.Warn("world: instance running without a public IP; no Talos node started", "server", ev.ID)
		return
	}
	ip := ev.PublicIPs[0]
	zone, id := ev.Zone, ev.ID
	boot := TalosBoot
	if w.opts.TalosBootFor != nil {
		boot = w.opts.TalosBootFor(ev.Name)
	}
	// A host lives until the world replaces or closes it, not for any caller's context.
	w.replaceHost(ip, ev.ID, func() (closer, error) {
		return talossim.StartNode(context.Background(), talossim.NodeOptions{
			Addr: ip, Mode: "cloud", Disks: []string{"/dev/sda"}, SystemDisk: "/dev/sda", Logger: w.log,
			// Read when the node has booted, not when the server started: user data cleared in
			// between is not there for it, as on Scaleway.
			UserDataSource: func(ctx context.Context) ([]byte, error) { return w.userData(ctx, zone, id) },
			BootDelay:      w.scale(boot), CRIDelay: w.scale(TalosCRI), TimeSyncDelay: w.scale(TalosTimeSync),
			VarLibDelay: w.scale(TalosVarLib), EtcdJoinTimeout: w.scale(constants.EtcdJoinTimeout), BootTimeout: w.scale(constants.BootTimeout),
			Latency: w.talosLatency(),
			Network: w.securityGroup(ip),
			Faults:  w.opts.TalosFaults,
			Subnet:  instanceSegment(ip), Gateway: gatewayOf(ip),
			ImagePullBlocked: w.pullBlocked.Load,
		})
	})
}

// talosLatency is the Talos profile scaled by the world's time factor.
func (w *World) talosLatency() talossim.Latency { return w.opts.Hosts.Talos.Scale(w.opts.TimeFactor) }

// baremetalBooted plays the Elastic Metal boot: rescue starts an SSH host on the worker's address
// that lets in the user "rescue" (not root: sudo guards the disk) with the rescue password or one
// of the keys given in ssh_key_ids, and no other key;
// a normal boot starts Talos in maintenance mode, but only when an image was written to the disk
// (a server booted normally with no OS answers nothing, as a real one would).
func (w *World) baremetalBooted(ev scwsim.BaremetalEvent) {
	disk := w.Disk(ev.ID)
	switch ev.BootType {
	case "rescue":
		var keys []ssh.PublicKey
		for _, line := range ev.SSHPublicKeys {
			if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
				keys = append(keys, k)
			}
		}
		_ = os.MkdirAll(filepath.Dir(disk), 0o700)
		start := func() {
			w.replaceHost(ev.IP, ev.ID, func() (closer, error) {
				return rescuesim.Start(context.Background(), rescuesim.Options{
					Addr: net.JoinHostPort(ev.IP, strconv.Itoa(w.opts.RescuePort)), User: cmp.Or(ev.RescueUser, "rescue"),
					Password: ev.RescuePassword, AuthorizedKeys: keys, SudoNoPassword: w.opts.RescueSudoNoPassword,
					DiskPath: disk, DiskSize: 64 << 20, Log: w.log,
					WriteTime: w.scale(w.opts.Hosts.ImageWrite),
				})
			})
		}
		boot := w.scale(w.opts.Hosts.RescueBoot)
		if boot <= 0 {
			start()
			return
		}
		// The machine boots the rescue image: nothing answers meanwhile, and a delete or another
		// reboot in between cancels this boot.
		w.hostGone(ev.ID)
		gen := w.bootGen(ev.ID)
		time.AfterFunc(boot, func() {
			if w.bootGen(ev.ID) == gen+1 {
				start()
			}
		})
	default:
		if !diskHasImage(disk) {
			w.hostGone(ev.ID)
			w.log.Info("world: worker booted normally with an empty disk: nothing answers", "server", ev.ID)
			return
		}
		w.replaceHost(ev.IP, ev.ID, func() (closer, error) {
			// Booted from the disk the rescue step wrote: that disk is the system disk.
			return talossim.StartNode(context.Background(), talossim.NodeOptions{
				Addr: ev.IP, Mode: "metal", Disks: []string{"/dev/sda"}, SystemDisk: "/dev/sda", Logger: w.log, Latency: w.talosLatency(),
				BootDelay: w.scale(TalosBoot), CRIDelay: w.scale(TalosCRI), TimeSyncDelay: w.scale(TalosTimeSync),
				JoinRetry: min(100*time.Millisecond, w.scale(time.Second)), // below a modeled second: the profile counts no retry
				Network:   w.securityGroup(ev.IP), Faults: w.opts.TalosFaults,
				ImagePullBlocked: w.pullBlocked.Load,
				Subnet:           metalSegment(ev.IP), Gateway: gatewayOf(ev.IP),
			})
		})
	}
}

// Disk is the file that plays the disk of the Elastic Metal server id: what its rescue system
// writes, what its normal boot starts from (a test plants what a tenant could leave there).
func (w *World) Disk(serverID string) string {
	return filepath.Join(w.opts.Dir, "disks", serverID+".img")
}

type closer interface{ Close() error }

func (w *World) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * w.opts.TimeFactor)
}

// userData is what a booting control plane reads from the metadata service: the server's
// cloud-init user data as it is now. The emulator may run its hooks (which stop hosts) inside
// the call, so it runs apart and a node stopped meanwhile does not wait for it.
func (w *World) userData(ctx context.Context, zone, serverID string) ([]byte, error) {
	ch := make(chan []byte, 1)
	go func() { ch <- w.Scaleway.UserData(zone, serverID)["cloud-init"] }()
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Node returns the Talos node listening on ip, nil when none.
func (w *World) Node(ip string) *talossim.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nodes[ip]
}

// Crash stops the Talos node listening on ip as a machine that died would: its APIs stop
// answering while Scaleway still lists its server as running (the soak's unhealthy spare). It
// tells whether a node listened there.
func (w *World) Crash(ip string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.nodes[ip]
	if ok {
		_ = n.Close()
		delete(w.nodes, ip)
	}
	return ok
}

// replaceHost stops what listened on ip and starts the next host there.
func (w *World) replaceHost(ip, serverID string, start func() (closer, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return // a delayed boot that fired while the world closed
	}
	w.stopLocked(ip)
	h, err := start()
	if err != nil {
		w.log.Error("world: start host", "ip", ip, "server", serverID, "err", err)
		return
	}
	switch v := h.(type) {
	case *talossim.Node:
		w.nodes[ip] = v
	case *rescuesim.Server:
		w.rescues[ip] = v
	}
	w.hostOf[ip] = serverID
}

// bootGen counts the boots and removals of a server: a delayed start runs only if nothing
// happened to the server since it was scheduled.
func (w *World) bootGen(serverID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return -1
	}
	w.gens[serverID]++
	return w.gens[serverID]
}

// hostGone stops the host of a server that stopped or was deleted: the hosts on the addresses
// that are still the server's (a reserved IP moves to the next server, and its host with it).
func (w *World) hostGone(serverID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gens[serverID]++
	for ip, id := range w.hostOf {
		if id == serverID {
			w.stopLocked(ip)
		}
	}
}

func (w *World) stopLocked(ip string) {
	delete(w.hostOf, ip)
	if n, ok := w.nodes[ip]; ok {
		_ = n.Close()
		delete(w.nodes, ip)
	}
	if r, ok := w.rescues[ip]; ok {
		_ = r.Close()
		delete(w.rescues, ip)
	}
}

// diskHasImage tells whether the rescue session wrote something to the disk file: Talos's metal
// image starts with a partition table, so an all-zero first sector means nothing was written.
func diskHasImage(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	for _, b := range buf[:n] {
		if b != 0 {
			return true
		}
	}
	return false
}

// bucketObjects lets the emulator's snapshot import read the real image bucket, refusing another
// bucket name or another region as Scaleway would.
type bucketObjects struct{ w *World }

func (o bucketObjects) Open(ctx context.Context, region, bucket, key string) (io.ReadCloser, int64, error) {
	if region != Region {
		return nil, 0, fmt.Errorf("bucket %s is in %s, not %s", bucket, Region, region)
	}
	if bucket != ImageBucket {
		return nil, 0, fmt.Errorf("bucket %s does not exist", bucket)
	}
	attrs, err := o.w.imageBucket.Attributes(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	r, err := o.w.imageBucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, 0, err
	}
	return r, attrs.Size, nil
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func uuidLike() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Profile is the whole cluster's latency profile of a world at real time (factor 1): the
// emulator's figures for the Scaleway transitions (each names its recording), the hosts' for
// Talos and the rescue system. It is the ETA's fallback (internal/eta) and the bound of the
// benchmarks.
func Profile(scw scwsim.Latency, h Hosts) cluster.Waits {
	return cluster.Waits{
		Scaleway: provscw.Waits{SnapshotImport: scw.SnapshotImport, BMDelivery: scw.BMDelivery, SGRules: scw.SGRules,
			VolumeCreate: scw.VolumeCreate, Poweron: scw.Poweron, Terminate: scw.Terminate, BMDelete: scw.BMDelete},
		RescueReboot: scw.BMRescueReboot, RescueBoot: h.RescueBoot, ImageWrite: h.ImageWrite, NormalReboot: scw.BMNormalReboot,
		TalosBoot: TalosBoot, TalosReady: max(TalosCRI, TalosTimeSync), ApplyReboot: h.Talos.ApplyReboot, KubeReady: h.Talos.KubeReady,
		CNIReady:     h.Talos.CNIReady + h.Talos.NetProbe, // the agents and DNS ready, then the pod-network probe's pods run
		EtcdSnapshot: h.Talos.EtcdSnapshot, EtcdRestore: h.Talos.EtcdRestore,
	}
}

// startChartServer serves the test CNI chart, as helm.cilium.io serves Cilium's archive.
func (w *World) startChartServer() error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("world: chart server: %w", err)
	}
	path := "/charts/" + cnichart.Name + ".tgz"
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(cnichart.Archive()) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	w.closers = append(w.closers, srv.Close)
	w.CiliumChart = "http://" + lis.Addr().String() + path + "@sha256:" + cnichart.SHA256()
	return nil
}

// registryHandler answers a registry's API version check (GET /v2/) as a registry that wants a
// token does: 401 with a Bearer challenge (OCI distribution spec, "Determining support"). Under
// register row node-egress=blocked the connection is dropped instead, as a firewall's reset.
func registryHandler(blocked bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if blocked {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
					return
				}
			}
			http.Error(w, "blocked", http.StatusBadGateway)
			return
		}
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://registry.invalid/token",service="registry"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
	})
}
