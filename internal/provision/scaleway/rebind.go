package scaleway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"golang.org/x/sync/errgroup"

	"github.com/pocbot/pocbot/internal/provision"
)

// nameSuffix is the one definition of what a node's resource is called after its cluster's
// "poc-<cluster>-" (provision.ResourceName): what the nodes create and look up, the sweep finds,
// and a rebinding renames; "" for a node whose resource has no name of its own (an IP is known by
// its address).
func nameSuffix(spec provision.Spec, node string) string {
	switch {
	case node == NodeSecGroup:
		return "cp"
	case node == NodeWorker:
		return spec.BaremetalHostname
	case node == NodeSSHKey:
		return "bot"
	case node == NodePersonKey:
		return "person"
	case strings.HasPrefix(node, "server-"):
		return "cp-" + strings.TrimPrefix(node, "server-")
	case strings.HasPrefix(node, "volume-"):
		return "cp-" + strings.TrimPrefix(node, "volume-") + "-root"
	}
	return ""
}

// Retag is one resource a rebinding gives another cluster's name and tags.
type Retag struct {
	Cluster              string // the cluster it becomes
	Node, Kind, Zone, ID string
	// Name is its new name ("": the kind has none, an IP); Tags its new tags (nil: the kind has
	// none, an IAM SSH key, which is known by its name).
	Name string
	Tags []string
}

// RebindPlan lists what makes the resources recorded in st those of cluster to: each one's new
// name and tags, exactly what an up of to would have given it (provision.ResourceName and
// NodeTags with the node's suffix), so that to's look-ups, its sweep and the orphan scan find them
// under to and never under the old name. The shared image snapshot keeps its shared tags. DNS
// records are refused: their names carry the cluster's (provision.Spec.DNSNames), and a record is
// renamed by deleting it, which the spare path does not do (spares are built without DNS).
// Pure; Driver.Rebind carries it out.
func RebindPlan(st *provision.State, to string) ([]Retag, error) {
	if err := provision.ValidateClusterID(to); err != nil {
		return nil, err
	}
	var out []Retag
	for node, rec := range st.Resources {
		if rec == nil || rec.ID == "" {
			continue
		}
		rt := Retag{Cluster: to, Node: node, Kind: rec.Kind, Zone: rec.Zone, ID: rec.ID}
		switch rec.Kind {
		case KindSnapshot: // the shared image: no cluster's
			continue
		case KindDNS:
			return nil, fmt.Errorf("cluster %s has DNS records in zone %s: records carry the cluster's name and are not renamed", st.ClusterID, st.Spec.DNSZone)
		case KindIP:
			rt.Tags = provision.NodeTags(to, node)
		case KindSSHKey:
			rt.Name = provision.ResourceName(to, nameSuffix(st.Spec, node))
		case KindSG, KindServer, KindVolume, KindBaremetal:
			rt.Name, rt.Tags = provision.ResourceName(to, nameSuffix(st.Spec, node)), provision.NodeTags(to, node)
		default:
			return nil, fmt.Errorf("cluster %s: node %s records a %s, which a rebinding does not know", st.ClusterID, node, rec.Kind)
		}
		if rt.Name == provision.ResourceName(to, "") {
			return nil, fmt.Errorf("cluster %s: node %s has no name suffix", st.ClusterID, node)
		}
		out = append(out, rt)
	}
	slices.SortFunc(out, func(a, b Retag) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}

// Rebind renames and retags the resources of plan (RebindPlan), all at once: each update is
// idempotent (the same name and tags again), so a rerun after a crash finishes what is left.
func (d *Driver) Rebind(ctx context.Context, plan []Retag) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	var errs []error
	errc := make(chan error, len(plan))
	for _, rt := range plan {
		g.Go(func() error {
			if err := d.retag(gctx, rt); err != nil {
				errc <- err
			}
			return nil
		})
	}
	_ = g.Wait()
	close(errc)
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (d *Driver) retag(ctx context.Context, rt Retag) error {
	zone := scw.Zone(rt.Zone)
	what := fmt.Sprintf("rename %s %s (node %s) to %q", kindNames[rt.Kind], rt.ID, rt.Node, rt.Name)
	var err error
	switch rt.Kind {
	case KindIP:
		_, err = d.inst.UpdateIP(&instance.UpdateIPRequest{Zone: zone, IP: rt.ID, Tags: &rt.Tags}, ctxOpt(ctx))
	case KindSG:
		_, err = d.inst.UpdateSecurityGroup(&instance.UpdateSecurityGroupRequest{Zone: zone, SecurityGroupID: rt.ID, Name: &rt.Name, Tags: &rt.Tags}, ctxOpt(ctx))
	case KindServer:
		_, err = d.inst.UpdateServer(&instance.UpdateServerRequest{Zone: zone, ServerID: rt.ID, Name: &rt.Name, Tags: &rt.Tags}, ctxOpt(ctx))
	case KindVolume:
		_, err = d.blk.UpdateVolume(&block.UpdateVolumeRequest{Zone: zone, VolumeID: rt.ID, Name: &rt.Name, Tags: &rt.Tags}, ctxOpt(ctx))
	case KindBaremetal:
		desc := workerDescription(rt.Cluster)
		_, err = d.bm.UpdateServer(&baremetal.UpdateServerRequest{Zone: zone, ServerID: rt.ID, Name: &rt.Name, Tags: &rt.Tags, Description: &desc}, ctxOpt(ctx))
	case KindSSHKey:
		_, err = d.iam.UpdateSSHKey(&iam.UpdateSSHKeyRequest{SSHKeyID: rt.ID, Name: &rt.Name}, ctxOpt(ctx))
	default:
		return fmt.Errorf("%s: unknown kind %s", what, rt.Kind)
	}
	if err != nil {
		return classify(what, rt.Zone, err)
	}
	return nil
}
