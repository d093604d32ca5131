package cost

import (
	"fmt"

	"github.com/scaleway/scaleway-sdk-go/scw"
)

// Kind is the kind of a billable resource.
type Kind string

// The kinds of billable resources one cluster is made of.
const (
	KindInstance      Kind = "instance"       // SKU: commercial type, e.g. PLAY2-NANO
	KindBaremetal     Kind = "baremetal"      // SKU: Elastic Metal offer name, e.g. EM-A116X-SSD
	KindBlockVolume   Kind = "block_volume"   // Quantity: bytes; IOPS: 5000 or 15000
	KindSnapshot      Kind = "snapshot"       // Quantity: bytes
	KindIP            Kind = "ip"             // flexible IPv4
	KindObjectStorage Kind = "object_storage" // Quantity: bytes stored (standard class)
)

// Compute reports whether the kind is a compute item: one whose unknown price
// makes `up` refuse unless the repository allows unknown prices.
func (k Kind) Compute() bool { return k == KindInstance || k == KindBaremetal }

// sized reports whether the kind is priced per GB.
func (k Kind) sized() bool {
	return k == KindBlockVolume || k == KindSnapshot || k == KindObjectStorage
}

// GB is 10⁹ bytes: Scaleway sizes volumes in decimal gigabytes (a recorded
// 20 GB volume has size 20000000000).
const GB int64 = 1_000_000_000

// Item is one line of what runs or would run.
type Item struct {
	// Name labels the line for people, e.g. "control plane root volumes".
	Name string
	Kind Kind
	// SKU is the commercial type (Instance) or offer name (Elastic Metal);
	// empty for the other kinds.
	SKU  string
	Zone scw.Zone
	// Quantity is the size in bytes for volumes, snapshots and objects.
	Quantity int64
	// IOPS is the performance class of a block volume (5000, 15000).
	IOPS uint32
	// Count is how many identical resources; 0 means 1.
	Count int64
}

func (it Item) count() int64 {
	if it.Count <= 0 {
		return 1
	}
	return it.Count
}

// Label is a short human description: "3 × PLAY2-NANO", "3 × 20 GB block 5K IOPS".
func (it Item) Label() string {
	n := it.count()
	switch it.Kind {
	case KindInstance, KindBaremetal:
		return fmt.Sprintf("%d × %s", n, it.SKU)
	case KindBlockVolume:
		return fmt.Sprintf("%d × %s block volume, %s IOPS", n, sizeLabel(it.Quantity), iopsLabel(it.IOPS))
	case KindSnapshot:
		return fmt.Sprintf("%d × %s block snapshot", n, sizeLabel(it.Quantity))
	case KindIP:
		return fmt.Sprintf("%d × flexible IPv4", n)
	case KindObjectStorage:
		return fmt.Sprintf("%s in Object Storage", sizeLabel(it.Quantity*n))
	}
	return fmt.Sprintf("%d × %s %s", n, it.Kind, it.SKU)
}

func sizeLabel(b int64) string {
	if b%GB == 0 {
		return fmt.Sprintf("%d GB", b/GB)
	}
	return fmt.Sprintf("%s GB", Money{Nanos: b}.Decimal(0))
}

func iopsLabel(iops uint32) string {
	if iops%1000 == 0 {
		return fmt.Sprintf("%dK", iops/1000)
	}
	return fmt.Sprint(iops)
}

func (it Item) validate() error {
	switch it.Kind {
	case KindInstance, KindBaremetal:
		if it.SKU == "" {
			return fmt.Errorf("%s item %q has no SKU (commercial type or offer name)", it.Kind, it.Name)
		}
	case KindBlockVolume:
		if it.IOPS == 0 {
			return fmt.Errorf("block volume item %q has no IOPS class", it.Name)
		}
		fallthrough
	case KindSnapshot, KindObjectStorage:
		if it.Quantity < 0 {
			return fmt.Errorf("%s item %q has a negative size", it.Kind, it.Name)
		}
	case KindIP:
	default:
		return fmt.Errorf("item %q has unknown kind %q", it.Name, it.Kind)
	}
	if it.Count < 0 {
		return fmt.Errorf("item %q has a negative count", it.Name)
	}
	return nil
}

// ClusterShape is what the cost of one cluster depends on. DefaultCluster
// gives the seed's defaults; provisioning code fills it from its Spec.
type ClusterShape struct {
	Zone             scw.Zone
	ControlPlanes    int64
	ControlPlaneType string
	RootVolumeBytes  int64
	RootVolumeIOPS   uint32
	WorkerOffer      string
	// WorkerZone is where the Elastic Metal worker runs (defaults to Zone).
	WorkerZone scw.Zone
	// SnapshotBytes is the Talos image snapshot the root volumes come from.
	// Zero leaves it out (it is shared between clusters of the same image).
	SnapshotBytes int64
	// ImageObjectBytes is the qcow2 object the snapshot is imported from.
	// Zero leaves it out (shared, like the snapshot).
	ImageObjectBytes int64
}

// DefaultCluster is the seed's cluster (docs/seed.md, The cluster): 3 PLAY2-NANO with a
// 20 GB 5000-IOPS root volume and a reserved IPv4 each, one EM-A116X-SSD
// worker, in fr-par-1. The image snapshot and object are counted at 10 GB
// and 1 GB — assumptions stated here, since their real sizes depend on the
// Talos image and are shared between clusters.
func DefaultCluster() ClusterShape {
	return ClusterShape{
		Zone:             scw.ZoneFrPar1,
		ControlPlanes:    3,
		ControlPlaneType: "PLAY2-NANO",
		RootVolumeBytes:  20 * GB,
		RootVolumeIOPS:   5000,
		WorkerOffer:      "EM-A116X-SSD",
		SnapshotBytes:    10 * GB,
		ImageObjectBytes: 1 * GB,
	}
}

// Items lists the billable resources of the cluster.
func (c ClusterShape) Items() []Item {
	wz := c.WorkerZone
	if wz == "" {
		wz = c.Zone
	}
	items := []Item{
		{Name: "control planes", Kind: KindInstance, SKU: c.ControlPlaneType, Zone: c.Zone, Count: c.ControlPlanes},
		{Name: "control plane root volumes", Kind: KindBlockVolume, Zone: c.Zone, Quantity: c.RootVolumeBytes, IOPS: c.RootVolumeIOPS, Count: c.ControlPlanes},
		{Name: "control plane IPv4", Kind: KindIP, Zone: c.Zone, Count: c.ControlPlanes},
		{Name: "worker", Kind: KindBaremetal, SKU: c.WorkerOffer, Zone: wz, Count: 1},
	}
	if c.SnapshotBytes > 0 {
		items = append(items, Item{Name: "Talos image snapshot", Kind: KindSnapshot, Zone: c.Zone, Quantity: c.SnapshotBytes, Count: 1})
	}
	if c.ImageObjectBytes > 0 {
		items = append(items, Item{Name: "Talos image object", Kind: KindObjectStorage, Zone: c.Zone, Quantity: c.ImageObjectBytes, Count: 1})
	}
	return items
}
