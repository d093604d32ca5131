package clusterops

import (
	"context"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Shape is what a spec bills: the cost package's view of the cluster. The shared image (snapshot
// and object) is counted with the cluster that uses it, as the seed's estimate does.
func Shape(spec provision.Spec) cost.ClusterShape {
	s := cost.DefaultCluster()
	s.Zone = scw.Zone(spec.Zone)
	s.ControlPlanes = int64(spec.CPCount)
	s.ControlPlaneType = spec.CPInstanceType
	s.RootVolumeBytes = int64(spec.CPVolumeSizeGB) * cost.GB
	s.RootVolumeIOPS = uint32(spec.CPVolumeIOPS)
	s.WorkerOffer = spec.BaremetalOffer
	return s
}

// Quote prices a spec with the quoter's sources; lifetime is the remaining lifetime (for the
// monthly-subscription alternative).
func Quote(ctx context.Context, q *cost.Quoter, spec provision.Spec, lifetime time.Duration, allowUnknown bool) (cost.Quote, error) {
	return q.Quote(ctx, Shape(spec).Items(), cost.QuoteOptions{AllowUnknown: allowUnknown, Lifetime: lifetime})
}

// PausedItems is what a paused cluster bills: its reserved IPv4s (kept so that its endpoints,
// certificates and kubeconfig stay valid), the shared image it comes back from (counted with it,
// as Shape does), and its etcd snapshot in the state bucket (snapshotBytes; 0 leaves it out).
// No machine, no volume.
func PausedItems(spec provision.Spec, snapshotBytes int64, releasedIPs bool) []cost.Item {
	var items []cost.Item
	for _, it := range Shape(spec).Items() {
		switch {
		case it.Kind == cost.KindIP && !releasedIPs, it.Kind == cost.KindSnapshot, it.Kind == cost.KindObjectStorage:
			items = append(items, it)
		}
	}
	if snapshotBytes > 0 {
		items = append(items, cost.Item{Name: "etcd snapshot (state bucket)", Kind: cost.KindObjectStorage, Zone: scw.Zone(spec.Zone), Quantity: snapshotBytes, Count: 1})
	}
	return items
}

// QuotePaused prices a paused cluster (PausedItems).
func QuotePaused(ctx context.Context, q *cost.Quoter, spec provision.Spec, snapshotBytes int64, releasedIPs bool, lifetime time.Duration) (cost.Quote, error) {
	return q.Quote(ctx, PausedItems(spec, snapshotBytes, releasedIPs), cost.QuoteOptions{AllowUnknown: true, Lifetime: lifetime})
}

// QuoteState prices the cluster whose header and state are h and st over lifetime, as it bills
// now: a paused cluster (Paused: pausing, paused, resuming) at its paused price (QuoteStatePaused),
// any other at its machines' (Quote). The one place that decides which price a cluster has.
func QuoteState(ctx context.Context, q *cost.Quoter, h statestore.Header, st *provision.State, lifetime time.Duration, allowUnknown bool) (cost.Quote, error) {
	if Paused(h) {
		return QuoteStatePaused(ctx, q, st, lifetime)
	}
	return Quote(ctx, q, st.Spec, lifetime, allowUnknown)
}

// QuoteStatePaused prices st paused: its recorded snapshot's size, and the reserved IPs unless
// the pause released them (`--release-ips` leaves no IP in the state).
func QuoteStatePaused(ctx context.Context, q *cost.Quoter, st *provision.State, lifetime time.Duration) (cost.Quote, error) {
	snap, _ := cluster.ParseSnapshot(st.Outputs[cluster.OutEtcdSnapshot])
	_, kept := st.Resources[scaleway.NodeIP(0)]
	return QuotePaused(ctx, q, st.Spec, snap.Size, !kept, lifetime)
}
