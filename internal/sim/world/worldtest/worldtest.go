// Package worldtest opens, for tests, the bot's parts on a running emulated world
// (internal/sim/world) through production's constructor, wiring.Open: the state store (checked
// for locks and conditional writes), the Scaleway client with its retrying transport and the
// driver, the image bucket, the price sources and a clusterops.Ops whose graph is the whole seed
// cluster, all read from the world's environment (world.Env) as a bot process reads its own.
// Every test package that runs whole clusters starts from here, so that they all exercise the
// wiring the bot runs with; Options change only what a setting or wiring.Config would.
package worldtest

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/settings"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/wiring"
)

// Options tune the parts; zero values are the usual test settings.
type Options struct {
	Log *slog.Logger
	// ScalewayURL is where the driver sends its calls (default: the world's emulator; a fault
	// proxy in front of it, say).
	ScalewayURL string
	// PollInterval and StepTimeout of the engine (defaults 20 ms and the engine's own).
	PollInterval, StepTimeout time.Duration
	// LockLease and LockWait of the Ops (defaults 30 s and 1 min). The lease outlasts the slowest
	// bucket request of a loaded machine (renewals give up after two thirds of it: a 5 s lease
	// lost ups on a 2-core machine at load 25); a test of a lapse sets a short one.
	LockLease, LockWait time.Duration
	// RunnerCIDR is the runner's address (cluster.Config.RunnerCIDR); default world.RunnerCIDR,
	// where the bot's connections come from.
	RunnerCIDR string
	// RescuePasswordWait bounds the wait for a rescue password the API has not shown
	// (cluster.Config.RescuePasswordWait; default the cluster's own).
	RescuePasswordWait time.Duration
	// ReadyTimeout bounds the wait for the network checks (cluster.Config.ReadyTimeout).
	ReadyTimeout time.Duration
	// ParkTimeout bounds a park (cluster.Config.ParkTimeout).
	ParkTimeout time.Duration
	// ServiceAccountKey is Spec's service_account_key: ECDSA when empty, where the bot's default
	// is RSA. An RSA-4096 key costs one to two seconds of CPU under -race, 13 % of what
	// clusterops' world tests spent; these tests ask about the engine and the wire, the key type
	// is the question of provision/talos's TestNewSecretsServiceAccountKeyType and chatops's
	// TestServiceAccountKeySetting, and cmd/bot's worlds build with the default.
	ServiceAccountKey settings.ServiceAccountKey
}

// Parts are what the bot would have opened.
type Parts struct {
	// World is the world they were opened on.
	World       *world.World
	Ops         *clusterops.Ops
	Store       *statestore.Store
	Driver      *scaleway.Driver
	Client      *scw.Client // on the world's emulator, never through the proxy
	ImageBucket *blob.Bucket
	// Spec is the seed's spec with the world's image bucket.
	Spec provision.Spec
	// ETA is the bot's ETA book on the world's state bucket.
	ETA *eta.Book
}

// Start starts a world for t (in a directory of t's when o.Dir is empty) and closes it in t's
// cleanup; a world that does not start fails t.
func Start(t testing.TB, o world.Options) *world.World {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	w, err := world.Start(t.Context(), o)
	if err != nil {
		t.Fatalf("start the world: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// New opens the parts on w with wiring.Open; everything it opens is closed by t's cleanup.
func New(t testing.TB, w *world.World, o Options) *Parts {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.PollInterval == 0 {
		o.PollInterval = 20 * time.Millisecond
	}
	if o.RunnerCIDR == "" {
		o.RunnerCIDR = world.RunnerCIDR
	}
	if o.LockLease == 0 {
		o.LockLease = 30 * time.Second
	}
	if o.LockWait == 0 {
		o.LockWait = time.Minute
	}
	env := map[string]string{}
	for _, kv := range w.Env() {
		env[kv[0]] = kv[1]
	}
	env["POC_POLL_INTERVAL"] = o.PollInterval.String()
	env["POC_LOCK_LEASE"] = o.LockLease.String()
	env["POC_LOCK_WAIT"] = o.LockWait.String()
	env["POC_RUNNER_CIDR"] = o.RunnerCIDR
	if o.ScalewayURL != "" {
		env["SCW_API_URL"] = o.ScalewayURL
	}
	// The parts outlive any one call: opened with a context of their own, closed by t's cleanup.
	b, err := wiring.Open(context.Background(), wiring.Config{
		Getenv: func(k string) string { return env[k] }, Log: o.Log,
		StepTimeout: o.StepTimeout, RescuePasswordWait: o.RescuePasswordWait, ReadyTimeout: o.ReadyTimeout, ParkTimeout: o.ParkTimeout,
	})
	if err != nil {
		t.Fatalf("open the bot's parts on the world: %v", err)
	}
	t.Cleanup(b.Close)
	spec := b.Spec
	spec.ServiceAccountKey = cmp.Or(o.ServiceAccountKey, settings.ServiceAccountKeyECDSA)
	return &Parts{World: w, Ops: b.Ops, Store: b.Store, Driver: b.Driver, Client: Client(t, w, w.ScalewayURL),
		ImageBucket: b.ImageBucket, Spec: spec, ETA: b.ETA}
}

// Client is a Scaleway SDK client with the world's credentials, on url.
func Client(t testing.TB, w *world.World, url string) *scw.Client {
	t.Helper()
	c, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth(w.AdminAccessKey, w.AdminSecretKey),
		scw.WithDefaultProjectID(world.ProjectID), scw.WithDefaultOrganizationID(world.OrganizationID),
		scw.WithDefaultZone(scw.ZoneFrPar1), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bucket opens one of the world's buckets with explicit credentials (no AWS_* environment needed).
func Bucket(t testing.TB, w *world.World, name string) *blob.Bucket {
	t.Helper()
	var b *blob.Bucket
	var err error
	if w.S3 != nil {
		b, err = w.S3.OpenBucket(context.Background(), name)
	} else {
		b, err = fileblob.OpenBucket(w.BucketDir(name), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Waits is the whole cluster's latency profile of a world: the emulator's figures for the
// Scaleway transitions, the hosts' for Talos and the rescue system (unscaled, factor 1).
func Waits(scw scwsim.Latency, h world.Hosts) cluster.Waits { return world.Profile(scw, h) }

// Live lists the emulator's resources that a cluster owns (by its tags), as "kind name".
func Live(w *world.World, cluster string) []string {
	var out []string
	for _, r := range w.Scaleway.Inventory() {
		if provision.OwnedBy(r.Tags, cluster) {
			out = append(out, r.Kind+" "+r.Name)
		}
	}
	return out
}

// GroupAdmits lists the rules of the security group sg (a state's record) that admit addr, as
// the emulator holds them, read with c.
func GroupAdmits(t testing.TB, c *scw.Client, sg *provision.Record, addr string) []string {
	t.Helper()
	rules, err := instance.NewAPI(c).ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{
		Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID}, scw.WithAllPages())
	if err != nil {
		t.Fatal(err)
	}
	var admits []string
	for _, rule := range rules.Rules {
		if rule.IPRange.Contains(net.ParseIP(addr)) {
			admits = append(admits, fmt.Sprintf("%s %v from %s", rule.Protocol, rule.DestPortFrom, rule.IPRange.String()))
		}
	}
	return admits
}
