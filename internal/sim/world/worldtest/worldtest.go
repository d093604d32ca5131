// Package worldtest builds, for tests, what the bot builds from its environment: the state store,
// the Scaleway client and driver, the image bucket and a clusterops.Ops whose graph is the whole
// seed cluster, all pointed at a running emulated world (internal/sim/world). Every test package
// that runs whole clusters starts from here, so that they all exercise the same wiring.
package worldtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Options tune the parts; zero values are the usual test settings.
type Options struct {
	Log *slog.Logger
	// ScalewayURL is where the driver sends its calls (default: the world's emulator; a fault
	// proxy in front of it, say).
	ScalewayURL string
	// PollInterval and StepTimeout of the engine (defaults 20 ms and the engine's own).
	PollInterval, StepTimeout time.Duration
	// LockLease and LockWait of the Ops (defaults 5 s and 1 min).
	LockLease, LockWait time.Duration
	// RunnerCIDR is the runner's address (cluster.Config.RunnerCIDR); default world.RunnerCIDR,
	// where the bot's connections come from.
	RunnerCIDR string
	// RescuePasswordWait bounds the wait for a rescue password the API has not shown
	// (cluster.Config.RescuePasswordWait; default the cluster's own).
	RescuePasswordWait time.Duration
	// ReadyTimeout bounds the wait for the network checks (cluster.Config.ReadyTimeout).
	ReadyTimeout time.Duration
}

// Parts are what the bot would have opened.
type Parts struct {
	Ops         *clusterops.Ops
	Store       *statestore.Store
	Driver      *scaleway.Driver
	Client      *scw.Client // on the world's emulator, never through the proxy
	ImageBucket *blob.Bucket
	// Spec is the seed's spec with the world's image bucket.
	Spec provision.Spec
}

// New builds the parts on w; everything it opens is closed by t's cleanup.
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
		o.LockLease = 5 * time.Second
	}
	if o.LockWait == 0 {
		o.LockWait = time.Minute
	}
	p := &Parts{Spec: provision.DefaultSpec()}
	p.Spec.ImageBucket = world.ImageBucket
	opts := []statestore.Option{statestore.WithLogger(o.Log)}
	if w.S3 != nil {
		opts = append(opts, statestore.WithBucket(Bucket(t, w, world.StateBucket)))
	} // a file:// state is opened by the store itself (its locks need the directory)
	var err error
	p.Store, err = statestore.Open(context.Background(), statestore.Config{StateURL: w.StateURL, KeyURL: w.StateKey}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Store.Close() })
	p.Client = Client(t, w, w.ScalewayURL)
	driverClient := p.Client
	if o.ScalewayURL != "" {
		driverClient = Client(t, w, o.ScalewayURL)
	}
	if p.Driver, err = scaleway.New(scaleway.Config{Client: driverClient}); err != nil {
		t.Fatal(err)
	}
	p.ImageBucket = Bucket(t, w, world.ImageBucket)
	ccfg := cluster.Config{Driver: p.Driver, FactoryURL: w.Factory.URL(), ImageBucket: p.ImageBucket, RescuePort: 2222,
		RunnerCIDR: o.RunnerCIDR, RescuePasswordWait: o.RescuePasswordWait, ReadyTimeout: o.ReadyTimeout, Log: o.Log,
		Pool: &poolstore.Pool{Store: p.Store}, Snapshots: clusterops.Snapshots{Store: p.Store}}
	p.Ops = &clusterops.Ops{
		Store: p.Store,
		Build: func(g *provision.Graph, spec provision.Spec) error { return cluster.Build(g, spec, ccfg) },
		BuildPause: func(g *provision.Graph, spec provision.Spec, release bool) error {
			return cluster.BuildPause(g, spec, ccfg, release)
		},
		Engine:     provision.Options{PollInterval: o.PollInterval, StepTimeout: o.StepTimeout, Logger: o.Log},
		Log:        o.Log,
		LockLease:  o.LockLease,
		LockWait:   o.LockWait,
		RunnerCIDR: o.RunnerCIDR,
		Quoter:     cost.NewQuoter(cost.APISources(p.Client)...),
		Pool:       &poolstore.Pool{Store: p.Store},
	}
	p.Ops.Preflight = cluster.Preflight(ccfg, nil)
	ccfg.ImageLocker = p.Ops
	return p
}

// Client is a Scaleway SDK client with the world's credentials, on url.
func Client(t testing.TB, w *world.World, url string) *scw.Client {
	t.Helper()
	c, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth(w.AccessKey, w.SecretKey),
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
