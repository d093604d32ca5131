package cluster

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob/memblob"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// noSnapshots stands for the snapshot store of a graph that is built, never run.
type noSnapshots struct{}

func (noSnapshots) Put(context.Context, string, io.Reader) (talos.SnapshotInfo, error) {
	return talos.SnapshotInfo{}, errors.New("not run")
}
func (noSnapshots) Verify(context.Context, string, talos.SnapshotInfo) error {
	return errors.New("not run")
}
func (noSnapshots) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("not run")
}

// A pause removes the DNS records whose addresses leave the cluster, before they leave (a node is
// destroyed once every node that needs it is): the edge's, which name the worker, always; every
// record with --release-ips, whose addresses go back to Scaleway. The records of kept IPs stay.
// Failed on the old code: no pause graph had a DNS node, so the records outlived their addresses
// (a parked worker adopted by another repository's cluster, released IPs anyone can be given).
func TestPauseGraphRemovesTheDNSRecordsWhoseAddressesLeave(t *testing.T) {
	const project = "11111111-2222-4333-8444-555555555555"
	client, err := scw.NewClient(scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", project), scw.WithDefaultProjectID(project),
		scw.WithDefaultZone(scw.ZoneFrPar1), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatal(err)
	}
	drv, err := scaleway.New(scaleway.Config{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	cfg := Config{Driver: drv, ImageBucket: bucket, FactoryURL: "http://127.0.0.1:9", Snapshots: noSnapshots{}}
	for _, tc := range []struct {
		zone    string
		release bool
		dnsNode string   // the pause's DNS node ("": none)
		needs   []string // what it must go before
	}{
		{zone: ""},
		{zone: "", release: true},
		{zone: "poc.example.com", dnsNode: scaleway.NodeDNSEdge, needs: []string{scaleway.NodeWorker}},
		{zone: "poc.example.com", release: true, dnsNode: scaleway.NodeDNS,
			needs: []string{scaleway.NodeWorker, scaleway.NodeIP(0), scaleway.NodeIP(1), scaleway.NodeIP(2)}},
	} {
		spec := provision.DefaultSpec()
		spec.ImageBucket, spec.DNSZone = "images", tc.zone
		g := provision.NewGraph()
		if err := BuildPause(g, spec, cfg, tc.release); err != nil {
			t.Fatalf("zone %q release %v: %v", tc.zone, tc.release, err)
		}
		for _, n := range []string{scaleway.NodeDNS, scaleway.NodeDNSEdge} {
			if _, ok := g.Node(n); ok != (n == tc.dnsNode) {
				t.Errorf("zone %q release %v: node %s in the pause graph: %v", tc.zone, tc.release, n, ok)
			}
		}
		if tc.dnsNode == "" {
			continue
		}
		n, _ := g.Node(tc.dnsNode)
		for _, need := range tc.needs {
			if !slices.Contains(n.Needs, need) {
				t.Errorf("zone %q release %v: %s does not need %s, so it may be destroyed after it: %v", tc.zone, tc.release, tc.dnsNode, need, n.Needs)
			}
		}
		if n.Destroy == nil {
			t.Errorf("%s has no destroy", tc.dnsNode)
		}
		snap, _ := g.Node(NodeEtcdSnapshot)
		if !slices.Contains(snap.Needs, tc.dnsNode) {
			t.Errorf("zone %q release %v: the snapshot does not need %s: a failed snapshot would leave the cluster without its records", tc.zone, tc.release, tc.dnsNode)
		}
	}
}
