package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/rescue"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// SecretParkTalosconfig is the admin access to an adopted worker's park configuration, kept
// until the cluster's own config is applied over it.
const SecretParkTalosconfig = "talos/park-talosconfig"

// Pool is the parked-worker pool as the graph uses it (internal/pool/poolstore implements it).
type Pool interface {
	Claim(ctx context.Context, cluster string, want pool.Want) (pool.Worker, error)
	Available(ctx context.Context, want pool.Want) (bool, error)
	Park(ctx context.Context, w pool.Worker) error
	Remove(ctx context.Context, serverID string) error
}

type parkForKey struct{}

// WithParkFor asks the downs run under ctx to park the worker for d instead of deleting it
// (0: delete). It is a per-operation setting (the repository's park_for, --park-for).
func WithParkFor(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, parkForKey{}, d)
}

func parkFor(ctx context.Context) time.Duration {
	d, _ := ctx.Value(parkForKey{}).(time.Duration)
	return d
}

type parkWhileScarceKey struct{}

// WithParkWhileScarce asks the downs run under ctx to park the worker for d, even without
// park_for, when its offer is not in stock (low or empty): a scheduled pause, whose resume would
// otherwise order the offer again every morning (register row em-stock).
func WithParkWhileScarce(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, parkWhileScarceKey{}, d)
}

// parkPlan decides how long a down parks the worker (0: it deletes it), and why: park_for when
// it is set, else, for a down asked to (parkWhileScarce), as long as that while the offer's stock
// is anything but available; a stock that cannot be read counts as not available (the worker is
// kept rather than given back on a guess).
func parkPlan(parkFor, parkWhileScarce time.Duration, offer, stock string) (time.Duration, string) {
	switch {
	case parkFor > 0:
		return parkFor, "park_for"
	case parkWhileScarce <= 0:
		return 0, ""
	case stock == "available":
		return 0, ""
	case stock == "":
		return parkWhileScarce, "the stock of " + offer + " could not be read"
	}
	return parkWhileScarce, offer + " is " + stock + " on stock"
}

// proveTimeout bounds the check that a claimed worker is what its pool entry says.
const proveTimeout = 2 * time.Minute

func (b *builder) want(spec provision.Spec) pool.Want {
	return pool.Want{Zone: spec.Zone, Offer: spec.BaremetalOffer, TalosVersion: spec.TalosVersion, Schematic: SchematicID(spec)}
}

func (b *builder) talosAddr(ip string) string {
	return net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort))
}

// stockUnlessParked skips the worker's stock check when a parked worker matches: the up will
// adopt it (and if the claim is lost to another up, the order itself reports the empty stock).
func (b *builder) stockUnlessParked(preflight func(ctx context.Context, r *provision.Run) error) func(ctx context.Context, r *provision.Run) error {
	return func(ctx context.Context, r *provision.Run) error {
		if preflight == nil {
			return nil
		}
		if _, ok := r.Resource(scaleway.NodeWorker); !ok && b.cfg.Pool != nil {
			if ok, err := b.cfg.Pool.Available(ctx, b.want(r.Spec())); err == nil && ok {
				r.Note(scaleway.NodeWorker, "a parked worker matches: the stock check is skipped")
				return nil
			}
		}
		return preflight(ctx, r)
	}
}

// adoptOrOrder runs before the worker's own Apply: with a pool and no worker yet, it adopts a
// matching parked worker, proven by an answer under the pool entry's CA; otherwise (none, or
// anything uncertain) the worker is ordered as usual.
func (b *builder) adoptOrOrder(apply func(ctx context.Context, r *provision.Run) error) func(ctx context.Context, r *provision.Run) error {
	return func(ctx context.Context, r *provision.Run) error {
		if _, ok := r.Resource(scaleway.NodeWorker); ok || b.cfg.Pool == nil {
			return apply(ctx, r)
		}
		ok, err := b.adopt(ctx, r)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		return apply(ctx, r)
	}
}

func (b *builder) adopt(ctx context.Context, r *provision.Run) (bool, error) {
	spec := r.Spec()
	w, err := b.cfg.Pool.Claim(ctx, r.ClusterID(), b.want(spec))
	if errors.Is(err, pool.ErrNone) {
		return false, nil
	}
	if err != nil {
		b.cfg.Log.Warn("parked-worker pool unreadable; ordering a new worker", "err", err)
		return false, nil
	}
	giveUp := func(why error, deleteIt bool) (bool, error) {
		b.cfg.Log.Warn("parked worker not adopted", "server", w.ServerID, "err", why, "deleted", deleteIt)
		r.Note(scaleway.NodeWorker, fmt.Sprintf("parked worker %s not adopted (%v); ordering a new one", w.ServerID, why))
		if deleteIt {
			if err := b.cfg.Driver.DeleteServer(ctx, r, w.Zone, w.ServerID); err != nil {
				return false, fmt.Errorf("delete parked worker %s that could not be proven: %w", w.ServerID, err)
			}
		}
		if err := b.cfg.Pool.Remove(ctx, w.ServerID); err != nil {
			return false, err
		}
		return false, nil
	}
	pctx, cancel := context.WithTimeout(talos.WithRetryInterval(ctx, r.PollInterval()), proveTimeout)
	err = talos.WaitTrusted(pctx, b.talosAddr(w.IP), w.Talosconfig)
	cancel()
	if err != nil {
		return giveUp(fmt.Errorf("it does not answer under its park CA: %w", err), true)
	}
	if err := b.cfg.Driver.AdoptWorker(ctx, r, w.Zone, w.ServerID); err != nil {
		// Not tagged parked any more, gone, not ready: not provably the pool's; leave it alone.
		return giveUp(err, false)
	}
	for _, kv := range [][2]string{{OutWorkerIP, w.IP}, {OutWorkerDisk, w.Disk}, {OutRescueHostKey, w.RescueHost}} {
		if err := r.SetOutput(ctx, kv[0], kv[1]); err != nil {
			return false, err
		}
	}
	if err := r.SetSecret(ctx, SecretParkTalosconfig, w.Talosconfig); err != nil {
		return false, err
	}
	// The disk holds the image of this version and schematic: the worker-image node has nothing to do.
	if err := r.SetTrigger(ctx, NodeWorkerImage, rescue.TriggerHash(b.metalImageURL(spec), w.Disk, w.ServerID)); err != nil {
		return false, err
	}
	r.Note(scaleway.NodeWorker, fmt.Sprintf("adopted parked worker %s (parked by %s at %s)", w.ServerID, w.ParkedFrom, w.ParkedAt.Format(time.RFC3339)))
	// Recorded in the state: the pool entry can go (a failure leaves a claimed entry, never a
	// second owner).
	if err := b.cfg.Pool.Remove(ctx, w.ServerID); err != nil {
		b.cfg.Log.Warn("adopted worker still listed (claimed) in the pool", "server", w.ServerID, "err", err)
	}
	return true, nil
}

// applyOverPark applies the worker's config over an adopted worker's park configuration, with
// the park CA's admin certificate; false when the worker was not adopted.
func (b *builder) applyOverPark(ctx context.Context, r *provision.Run, addr string, trusted talos.Route, cfg, talosconfig []byte) (bool, error) {
	parkTC, ok := r.Secret(SecretParkTalosconfig)
	if !ok || len(parkTC) == 0 {
		return false, nil
	}
	if err := talos.ApplyTrusted(ctx, addr, parkTC, cfg); err != nil {
		return true, fmt.Errorf("apply the worker's config over its park configuration: %w", err)
	}
	if err := talos.WaitTrustedAt(ctx, trusted, talosconfig); err != nil {
		return true, fmt.Errorf("adopted worker %s does not trust the cluster CA after its config: %w", addr, err)
	}
	return true, r.SetSecret(ctx, SecretParkTalosconfig, nil)
}

// parkOrDelete replaces the worker's delete by its parking when parking is on; any failure of
// the park, or anything it cannot prove, falls back to the delete.
func (b *builder) parkOrDelete(destroy func(ctx context.Context, r *provision.Run) error) func(ctx context.Context, r *provision.Run) error {
	return func(ctx context.Context, r *provision.Run) error {
		w, ok := r.Resource(scaleway.NodeWorker)
		if b.cfg.Pool == nil || !ok {
			return destroy(ctx, r)
		}
		stock := ""
		scarce, _ := ctx.Value(parkWhileScarceKey{}).(time.Duration)
		if parkFor(ctx) <= 0 && scarce > 0 {
			stock, _ = b.cfg.Driver.OfferStock(ctx, w.Zone, r.Spec().BaremetalOffer)
		}
		d, why := parkPlan(parkFor(ctx), scarce, r.Spec().BaremetalOffer, stock)
		if d <= 0 {
			return destroy(ctx, r)
		}
		if why != "park_for" {
			r.Note(scaleway.NodeWorker, "kept parked: "+why)
		}
		if err := b.park(WithParkFor(ctx, d), r); err != nil {
			b.cfg.Log.Warn("worker not parked; deleting it", "cluster", r.ClusterID(), "err", err)
			r.Note(scaleway.NodeWorker, "not parked, deleted: "+err.Error())
			return destroy(ctx, r)
		}
		return nil
	}
}

func (b *builder) park(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	spec := r.Spec()
	w, _ := r.Resource(scaleway.NodeWorker)
	ip, _ := r.Output(OutWorkerIP)
	disk, _ := r.Output(OutWorkerDisk)
	tc, _ := r.Secret(SecretTalosconfig)
	switch {
	case ip == "" || disk == "" || len(tc) == 0:
		return errors.New("no worker address, disk or talosconfig recorded")
	case r.Trigger(NodeWorkerImage) != rescue.TriggerHash(b.metalImageURL(spec), disk, w.ID):
		return errors.New("the image on the worker's disk is not proven to be this spec's")
	case r.Trigger(NodeWorkerConfig) == "":
		return errors.New("the worker was never configured by this cluster")
	}
	addr := b.talosAddr(ip)
	// The parked node's Talos API is open to everyone: it holds nothing of a cluster (STATE and
	// EPHEMERAL wiped) and answers mutual TLS only, under its own park CA, whose admin certificate
	// only the pool entry holds. The next up that adopts it runs from an address no one knows
	// now (a hosted runner's), and no control plane can forward to it (another CA): admitting
	// the admin CIDRs only would make any up from elsewhere delete it, and admitting this run's
	// runner would keep a runner's address.
	admin := []string{"0.0.0.0/0"}
	// The park configuration (a new secrets bundle: seconds of key generation) needs nothing of
	// the reset: it is made while the node resets and reboots.
	type made struct {
		park *talos.Park
		err  error
	}
	gen := make(chan made, 1)
	go func() {
		p, err := talos.ParkConfig(ctx, talos.ParkInput{IP: ip, Disk: disk, TalosVersion: spec.TalosVersion, SchematicID: SchematicID(spec), AdminCIDRs: admin})
		gen <- made{p, err}
	}()
	if err := talos.Reset(ctx, addr, tc); err != nil {
		<-gen
		return err
	}
	m := <-gen
	if m.err != nil {
		return m.err
	}
	park := m.park
	// The node is in maintenance mode from its reboot until this apply: the window is one
	// reboot long, and an adoption proves the park CA before trusting the node. Before that
	// reboot it still answers as configured (the reset sequence runs first): waited out.
	if _, err := talos.ApplyInsecureAfterReset(ctx, addr, park.Config); err != nil {
		return fmt.Errorf("apply the park configuration after the reset: %w", err)
	}
	if err := talos.WaitTrusted(ctx, addr, park.Talosconfig); err != nil {
		return fmt.Errorf("the reset worker does not answer under its park CA: %w", err)
	}
	hostKey, _ := r.Output(OutRescueHostKey)
	now := b.now()
	entry := pool.Worker{ServerID: w.ID, IP: ip, Zone: w.Zone, Offer: spec.BaremetalOffer, TalosVersion: spec.TalosVersion,
		Schematic: SchematicID(spec), Disk: disk, RescueHost: hostKey, Talosconfig: park.Talosconfig,
		ParkedFrom: r.ClusterID(), ParkedAt: now, ParkedUntil: now.Add(parkFor(ctx))}
	// The entry first, the tag second: a crash between them leaves a server still tagged with
	// the cluster (swept by a rerun of the down) and an entry an adoption refuses.
	if err := b.cfg.Pool.Park(ctx, entry); err != nil {
		return err
	}
	if err := b.cfg.Driver.ParkWorker(ctx, r); err != nil {
		if rerr := b.cfg.Pool.Remove(ctx, w.ID); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	r.Note(scaleway.NodeWorker, fmt.Sprintf("parked worker %s until %s", w.ID, entry.ParkedUntil.Format(time.RFC3339)))
	return nil
}

func (b *builder) now() time.Time {
	if b.cfg.Now != nil {
		return b.cfg.Now()
	}
	return time.Now()
}
