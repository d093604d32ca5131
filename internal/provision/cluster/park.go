package cluster

import (
	"cmp"
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

// outParkServer is the server an adoption took from the pool: the park's talosconfig is that
// server's and no other's (a later run may have deleted it and ordered another).
const outParkServer = "worker_park_server"

// OutWorkerAdopted says where an adopted worker comes from (adoptedFrom): who parked it, when,
// and the proof of its re-image; the status comment shows it. Cleared when the worker goes.
const OutWorkerAdopted = "worker_adopted_from"

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

type scopeKey struct{}

// WithPoolScope says whose clusters run under ctx (their repository, and whether it shares its
// parked workers): a park records it in the pool entry, an adoption is offered only the workers
// of that scope (pool.Worker.Offered). Without one, the scope is the empty repository, which
// shares nothing.
func WithPoolScope(ctx context.Context, s pool.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

func poolScope(ctx context.Context) pool.Scope {
	s, _ := ctx.Value(scopeKey{}).(pool.Scope)
	return s
}

// proveTimeout bounds the check that a claimed worker is what its pool entry says.
const proveTimeout = 2 * time.Minute

// DefaultParkTimeout bounds a park (Config.ParkTimeout): the rescue reboot and boot, the image
// write and its read-back, the reboot onto the disk, the park configuration's apply and reboot,
// about 7 minutes on Scaleway (docs/seed.md, Latencies), 10 at the high estimates. Past it the
// worker is deleted, within the step's own bound: a down never ends incomplete because of a park.
const DefaultParkTimeout = 20 * time.Minute

// parkDeadline is how long a park may take from now under ctx: the configured bound, and never
// more than two thirds of what the step has left, so that the delete that replaces a park that
// ran out of time has time to run.
func (b *builder) parkDeadline(ctx context.Context) time.Duration {
	d := cmp.Or(b.cfg.ParkTimeout, DefaultParkTimeout)
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)*2/3)
	}
	return d
}

func (b *builder) want(ctx context.Context, spec provision.Spec) pool.Want {
	return pool.Want{Zone: spec.Zone, Offer: spec.BaremetalOffer, TalosVersion: spec.TalosVersion, Schematic: SchematicID(spec),
		ImageURL: b.metalImageURL(spec), Scope: poolScope(ctx)}
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
			if ok, err := b.cfg.Pool.Available(ctx, b.want(ctx, r.Spec())); err == nil && ok {
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
	want := b.want(ctx, spec)
	w, err := b.cfg.Pool.Claim(ctx, r.ClusterID(), want)
	if errors.Is(err, pool.ErrNone) {
		return false, nil
	}
	if err != nil {
		b.cfg.Log.Warn("parked-worker pool unreadable; ordering a new worker", "err", err)
		return false, nil
	}
	giveUp := func(why error, deleteIt bool) (bool, error) {
		if ctx.Err() != nil {
			// This run was stopped (another step failed, the lock was lost, the runner stops):
			// that proves nothing of the worker. The claim stays this cluster's, and its rerun
			// takes it back (pool.Doc.Claim) instead of ordering a second server.
			return false, fmt.Errorf("adopt parked worker %s: %w (%w)", w.ServerID, ctx.Err(), why)
		}
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
	// The claim matched only an entry offered to this repository and proving the re-image
	// (pool.Worker.Matches); the proof is checked again where the server is taken, whatever the
	// pool's implementation: an unproven disk is never booted, the server is deleted.
	if err := w.Proven(want.ImageURL); err != nil {
		return giveUp(fmt.Errorf("its disk is not proven re-imaged: %w", err), true)
	}
	pctx, cancel := context.WithTimeout(talos.WithRetryInterval(ctx, r.PollInterval()), proveTimeout)
	err = talos.WaitTrusted(pctx, b.talosAddr(w.IP), w.Talosconfig)
	cancel()
	if err != nil {
		return giveUp(fmt.Errorf("it does not answer under its park CA: %w", err), true)
	}
	if err := b.cfg.Driver.AdoptWorker(ctx, r, w.Zone, w.ServerID); err != nil {
		// Not tagged parked (nor already this cluster's), gone, not ready: not provably the
		// pool's; leave it alone.
		return giveUp(err, false)
	}
	if err := r.Set(ctx, map[string][]byte{SecretParkTalosconfig: w.Talosconfig}, map[string]string{
		OutWorkerIP: w.IP, OutWorkerDisk: w.Disk, OutRescueHostKey: w.RescueHost, outParkServer: w.ServerID, OutWorkerAdopted: adoptedFrom(w),
	}); err != nil {
		return false, err
	}
	// The disk holds the image of this version and schematic: the worker-image node has nothing to do.
	if err := r.SetTrigger(ctx, NodeWorkerImage, rescue.TriggerHash(b.metalImageURL(spec), w.Disk, w.ServerID)); err != nil {
		return false, err
	}
	r.Note(scaleway.NodeWorker, "adopted "+adoptedFrom(w))
	// Recorded in the state: the pool entry can go (a failure leaves a claimed entry, never a
	// second owner: the reaper removes the entry of a server no longer tagged parked).
	if err := b.cfg.Pool.Remove(ctx, w.ServerID); err != nil {
		b.cfg.Log.Warn("adopted worker still listed (claimed) in the pool", "server", w.ServerID, "err", err)
	}
	return true, nil
}

// adoptedFrom says where an adopted worker comes from, for the status comment (OutWorkerAdopted).
func adoptedFrom(w pool.Worker) string {
	from := cmp.Or(w.Repository, "no repository")
	s := fmt.Sprintf("parked worker %s, parked by %s (cluster %s) at %s", w.ServerID, from, w.ParkedFrom, w.ParkedAt.UTC().Format(time.RFC3339))
	if r := w.Reimage; r != nil {
		s += fmt.Sprintf("; its disk written again from the pinned image and read back (sha256 %.12s…) at %s", r.SHA256, r.At.UTC().Format(time.RFC3339))
	}
	return s
}

// applyOverPark applies the worker's config over an adopted worker's park configuration, with
// the park CA's admin certificate, and waits until the node answers under the cluster's CA
// through route trusted; false when the worker was not adopted (or no longer is: the server the
// park's certificate came with is gone).
func (b *builder) applyOverPark(ctx context.Context, r *provision.Run, addr string, trusted talos.Route, cfg, talosconfig []byte) (bool, error) {
	parkTC, ok := r.Secret(SecretParkTalosconfig)
	if !ok || len(parkTC) == 0 {
		return false, nil
	}
	if w, _ := r.Resource(scaleway.NodeWorker); w.ID == "" || outputOf(r, outParkServer) != w.ID {
		// An earlier run deleted the adopted server and ordered this one: the park's
		// certificate opens nothing here.
		return false, r.SetSecret(ctx, SecretParkTalosconfig, nil)
	}
	if err := applyOverParkLoop(ctx, addr, trusted, parkTC, talosconfig, cfg, r.PollInterval()); err != nil {
		return true, fmt.Errorf("adopted worker %s: %w", addr, err)
	}
	return true, r.SetSecret(ctx, SecretParkTalosconfig, nil)
}

// applyOverParkTimeout bounds applyOverParkLoop: the apply's reboot, minutes, with room.
const applyOverParkTimeout = 10 * time.Minute

// applyOverParkAttempt bounds one apply under the park CA: one Talos call with its handshake,
// in real time whatever the world's time factor (a scaled world scales its polls, not TLS).
const applyOverParkAttempt = 10 * time.Second

// applyOverParkLoop decides attempt by attempt, until the node answers under the cluster's CA or
// applyOverParkTimeout: each round asks first whether the node already answers under the
// cluster's CA (an apply that landed, this run's or an earlier one's), and otherwise, until one
// apply succeeded, applies cfg under the park CA once. A node rebooting into the cluster's
// configuration answers neither for a while, and one that took it refuses the park's
// certificate from then on: neither is waited for as if it could change, the next round asks
// again. (A wait under the cluster's CA after an apply that had not landed waited for good.)
func applyOverParkLoop(ctx context.Context, addr string, trusted talos.Route, parkTC, clusterTC, cfg []byte, every time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, applyOverParkTimeout)
	defer cancel()
	applied := false
	var last error
	for {
		if talos.Configured(ctx, trusted, clusterTC) {
			return nil
		}
		if !applied {
			actx, acancel := context.WithTimeout(ctx, applyOverParkAttempt)
			last = talos.ApplyTrusted(actx, addr, parkTC, cfg)
			acancel()
			applied = last == nil
		}
		select {
		case <-ctx.Done():
			if applied {
				return fmt.Errorf("applied its configuration over the park, but it never answered under the cluster's CA through %s (%w)", trusted, ctx.Err())
			}
			return fmt.Errorf("neither took its configuration over the park nor answered under the cluster's CA (%w); last apply: %w", ctx.Err(), last)
		case <-time.After(every):
		}
	}
}

// parkOrDelete replaces the worker's delete by its parking when parking is on; a park that
// fails, cannot prove what it parks, or outlasts its deadline (parkDeadline) falls back to the
// delete.
func (b *builder) parkOrDelete(destroy func(ctx context.Context, r *provision.Run) error) func(ctx context.Context, r *provision.Run) error {
	return func(ctx context.Context, r *provision.Run) error {
		if _, ok := r.Resource(scaleway.NodeWorker); !ok || b.cfg.Pool == nil {
			return destroy(ctx, r)
		}
		// A park that stopped after the retag left the server parked, in the pool, while the
		// state still records it; another cluster may have adopted it since. Not this cluster's
		// any more: neither parked again nor deleted.
		ours, err := b.cfg.Driver.OwnsWorker(ctx, r)
		if err != nil {
			return err
		}
		if !ours {
			r.Note(scaleway.NodeWorker, "the recorded worker no longer carries this cluster's tags (parked by an earlier run, adopted, or gone): left alone")
			return nil
		}
		stock := ""
		scarce, _ := ctx.Value(parkWhileScarceKey{}).(time.Duration)
		if parkFor(ctx) <= 0 && scarce > 0 {
			w, _ := r.Resource(scaleway.NodeWorker)
			stock, _ = b.cfg.Driver.OfferStock(ctx, w.Zone, r.Spec().BaremetalOffer)
		}
		d, why := parkPlan(parkFor(ctx), scarce, r.Spec().BaremetalOffer, stock)
		if d <= 0 {
			return destroy(ctx, r)
		}
		if why != "park_for" {
			r.Note(scaleway.NodeWorker, "kept parked: "+why)
		}
		ctx = WithParkFor(ctx, d)
		pctx, cancel := context.WithTimeout(ctx, b.parkDeadline(ctx))
		err = b.park(pctx, r)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, errParkRecorded) {
			return err // the step itself ended, or the pool holds the worker: its rerun decides
		}
		b.cfg.Log.Warn("worker not parked; deleting it", "cluster", r.ClusterID(), "err", err)
		r.Note(scaleway.NodeWorker, "not parked, deleted: "+err.Error())
		return destroy(ctx, r)
	}
}

// park writes the pinned image over the worker's whole system disk again from its rescue
// system and reads it back, boots it, applies the park configuration in maintenance mode, checks
// it answers under the park CA, records the pool entry (with the re-image's proof) and retags the
// server as parked. No step talks to the worker as the cluster configured it: its Talos firewall
// admits the nodes and the admin CIDRs, never a runner (docs/architecture.md, "The runner"), while
// the rescue system, a node in maintenance mode and the park configuration admit the runner; so
// a runner outside admin_cidrs parks as one inside does, and a park needs no control plane.
// Whatever a crash left (a configured node, one in rescue, one under a park CA this state never
// recorded), a rerun starts again from the rescue reboot.
func (b *builder) park(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	spec := r.Spec()
	w, _ := r.Resource(scaleway.NodeWorker)
	disk, _ := r.Output(OutWorkerDisk)
	if w.ID == "" || w.Zone == "" {
		return errors.New("no worker server recorded")
	}
	// The park configuration (a new secrets bundle) needs only the address and the disk: it is
	// made while the worker reboots into rescue, when both are known.
	gen := func(ip, disk string) func() (*talos.Park, error) {
		ch := make(chan struct{})
		var p *talos.Park
		var err error
		go func() {
			defer close(ch)
			// Its Talos API is open to everyone: see parkAdmins.
			p, err = talos.ParkConfig(ctx, talos.ParkInput{IP: ip, Disk: disk, TalosVersion: spec.TalosVersion,
				SchematicID: SchematicID(spec), FactoryURL: b.cfg.FactoryURL, AdminCIDRs: parkAdmins})
		}()
		return func() (*talos.Park, error) { <-ch; return p, err }
	}
	var made func() (*talos.Park, error)
	if ip := cmp.Or(outputOf(r, OutWorkerIP), w.Attrs["ipv4"]); ip != "" && disk != "" {
		made = gen(ip, disk)
	}
	boot, res, err := b.rescueWrite(ctx, r, disk)
	if err != nil {
		return fmt.Errorf("write the worker's disk again from rescue: %w", err)
	}
	ip := boot.IP
	if made == nil || res.Disk != disk || ip != cmp.Or(outputOf(r, OutWorkerIP), w.Attrs["ipv4"]) {
		made = gen(ip, res.Disk)
	}
	writtenAt := b.now()
	if _, err := b.cfg.Driver.RebootWorker(ctx, r, "normal"); err != nil {
		return err
	}
	park, err := made()
	if err != nil {
		return err
	}
	addr := b.talosAddr(ip)
	// Freshly written, the node boots into maintenance mode: it takes a configuration from
	// whoever reaches its port 50000 first (Elastic Metal has no security group) for the one
	// boot until this apply; a node someone else configured refuses it, and the worker is deleted.
	if _, err := talos.ApplyInsecure(ctx, addr, park.Config); err != nil {
		return fmt.Errorf("apply the park configuration: %w", err)
	}
	if err := talos.WaitTrusted(ctx, addr, park.Talosconfig); err != nil {
		return fmt.Errorf("the re-imaged worker does not answer under its park CA: %w", err)
	}
	now := b.now()
	scope := poolScope(ctx)
	entry := pool.Worker{ServerID: w.ID, IP: ip, Zone: w.Zone, Offer: spec.BaremetalOffer, TalosVersion: spec.TalosVersion,
		Schematic: SchematicID(spec), Disk: res.Disk, RescueHost: res.HostKey, Talosconfig: park.Talosconfig,
		ParkedFrom: r.ClusterID(), ParkedAt: now, ParkedUntil: now.Add(parkFor(ctx)), Repository: scope.Repository, Shared: scope.Share,
		Reimage: &pool.Reimage{ImageURL: res.ImageURL, SHA256: res.SHA256, Bytes: res.BytesWritten, Disk: res.Disk, At: writtenAt}}
	// The entry first, the tag second: a crash between them leaves a server still tagged with
	// the cluster (parked again, or deleted, by a rerun of the down) and an entry an adoption
	// refuses (the server is not tagged parked).
	if err := b.cfg.Pool.Park(ctx, entry); err != nil {
		return err
	}
	if err := b.cfg.Driver.ParkWorker(ctx, r); err != nil {
		// The retag may have happened (the record's forgetting failed): the server is then the
		// pool's, and a rerun finds it so (OwnsWorker) and leaves it parked; or it did not, and
		// the rerun parks it again over its entry. Neither is a reason to delete it.
		return fmt.Errorf("%w: %w", errParkRecorded, err)
	}
	r.Note(scaleway.NodeWorker, fmt.Sprintf("parked worker %s until %s (disk written again and verified, sha256 %.12s…)", w.ID, entry.ParkedUntil.Format(time.RFC3339), res.SHA256))
	return nil
}

// errParkRecorded is a park that failed after its pool entry was written: the rerun finishes it.
var errParkRecorded = errors.New("the worker's pool entry is written but its retag was not recorded")

// parkAdmins may reach a parked worker's Talos API: everyone. It holds nothing of a cluster (its
// disk was just written again) and answers mutual TLS only, under its own park CA, whose admin
// certificate only the pool entry holds. The next up that adopts it runs from an address no one
// knows now (a hosted runner's), and no control plane can forward to it (another CA): admitting
// the admin CIDRs only would make any up from elsewhere delete it, and admitting this run's
// runner would keep a runner's address.
var parkAdmins = []string{"0.0.0.0/0"}

func (b *builder) now() time.Time {
	if b.cfg.Now != nil {
		return b.cfg.Now()
	}
	return time.Now()
}

func outputOf(r *provision.Run, key string) string { v, _ := r.Output(key); return v }
