package scaleway

import (
	"context"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// The driver's calls of the Scaleway API share a few shapes, written once here: get one resource
// by id (gone is no error), list a node's tagged resources, delete and wait until gone, destroy
// what a node recorded, and list every resource of a kind (the sweep, ListTagged, the headroom).
// The SDK's methods are passed as values.

// getFound gets one resource with get: (nil, nil) when it is gone or conv reads it as unusable
// (nil), else conv's reading of it; an error is classified as "get "+what.
func getFound[Req, Res any](ctx context.Context, get func(*Req, ...scw.RequestOption) (Res, error), req *Req,
	zone scw.Zone, what string, conv func(Res) *found) (*found, error) {
	res, err := get(req, ctxOpt(ctx))
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("get "+what, string(zone), err)
	}
	return conv(res), nil
}

// made is a create's answer as ensure wants it: err classified as what, else the resource read
// reads (called only without an error: a failed create answers no resource).
func made(err error, what string, zone scw.Zone, read func() *found) (*found, error) {
	if err != nil {
		return nil, classify(what, string(zone), err)
	}
	return read(), nil
}

// listFound lists every page with list and returns the items keep accepts, as conv reads them;
// an error is classified as "list "+what.
func listFound[Req, Res, T any](ctx context.Context, list func(*Req, ...scw.RequestOption) (Res, error), req *Req,
	zone scw.Zone, what string, items func(Res) []T, keep func(T) bool, conv func(T) *found) ([]*found, error) {
	res, err := list(req, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return nil, classify("list "+what, string(zone), err)
	}
	var out []*found
	for _, x := range items(res) {
		if keep(x) {
			out = append(out, conv(x))
		}
	}
	return out, nil
}

// nodeTags are the tags a node's resource is listed by: its cluster's and its own.
func nodeTags(r *provision.Run, node string) []string {
	return []string{provision.ClusterTag(r.ClusterID()), provision.ResTag(node)}
}

// deleteWait polls until the resource of kind and id is gone: get reads it (not found is gone),
// step asks for its deletion as its state allows and says whether it is gone already. The
// deletion is reported under the name the last read gave.
func deleteWait[Res any](ctx context.Context, r *provision.Run, zone scw.Zone, kind, id, what string,
	get func(ctx context.Context) (Res, error), name func(Res) string, step func(ctx context.Context, res Res) (bool, error)) error {
	var last string
	err := r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
		res, err := get(ctx)
		if notFound(err) {
			return true, nil
		}
		if err != nil {
			return false, classify(what, string(zone), err)
		}
		last = name(res)
		return step(ctx, res)
	})
	if err != nil {
		return err
	}
	r.Deleted(kind, id, last)
	return nil
}

// awaitFound polls get until done says the resource is ready (or fails), then records the last
// reading for node; a resource that disappears meanwhile fails the wait with what: gone.
func awaitFound(ctx context.Context, r *provision.Run, node, kind string, zone scw.Zone, what, gone string,
	get func(ctx context.Context) (*found, error), done func(*found) (bool, error)) error {
	var last *found
	err := r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
		v, err := get(ctx)
		if err != nil {
			return false, err
		}
		if v == nil {
			return false, fmt.Errorf("%s: %s", what, gone)
		}
		last = v
		return done(v)
	})
	if err != nil {
		return err
	}
	return record(ctx, r, node, kind, string(zone), last)
}

// destroyRecorded is the Destroy of a node whose one resource is deleted by del: nothing when
// the state records none.
func destroyRecorded(node string, del func(ctx context.Context, r *provision.Run, zone scw.Zone, id string) error) func(ctx context.Context, r *provision.Run) error {
	return func(ctx context.Context, r *provision.Run) error {
		rec, ok := r.Resource(node)
		if !ok {
			return nil
		}
		return del(ctx, r, scw.Zone(rec.Zone), rec.ID)
	}
}

// putNodeRules PUTs, for node, the control planes' group's rules for the addresses of ipNodes
// and the worker's. The worker's address is required when needWorker, else left out while it
// is not known.
func (d *Driver) putNodeRules(ctx context.Context, r *provision.Run, node, sgID string, ipNodes []string, needWorker bool) error {
	ips, err := ipAddrs(r, ipNodes)
	if err != nil {
		return err
	}
	w, err := ipAddrs(r, []string{NodeWorker})
	if err != nil && needWorker {
		return err
	}
	rules, err := Rules(EffectiveSpec(r), ips, w)
	if err != nil {
		return err
	}
	return d.putRules(ctx, r, node, sgID, rules)
}

// listed is one resource of a project list, whatever its product.
type listed struct {
	id, name string
	tags     []string
	created  *time.Time
	addr     string // the public IPv4 of an IP or an Elastic Metal server ("" for the others)
}

// sweptKinds are the kinds the cluster sweep deletes and ListTagged lists, in the order the API
// lets them be deleted: the servers before the IPs, volumes and group they hold.
var sweptKinds = []string{KindServer, KindBaremetal, KindIP, KindVolume, KindSG}

// kindNames name the kinds in errors ("list tagged Elastic Metal servers").
var kindNames = map[string]string{
	KindServer: "servers", KindBaremetal: "Elastic Metal servers", KindIP: "IPs", KindVolume: "volumes",
	KindSG: "security groups", KindSnapshot: "snapshots",
}

// listKind lists every page of the project's resources of kind in zone that carry every tag of
// tags (none: all of them).
func (d *Driver) listKind(ctx context.Context, zone scw.Zone, kind string, tags []string) ([]listed, error) {
	o := []scw.RequestOption{ctxOpt(ctx), scw.WithAllPages()}
	var out []listed
	switch kind {
	case KindServer:
		res, err := d.inst.ListServers(&instance.ListServersRequest{Zone: zone, Project: &d.project, Tags: tags}, o...)
		if err != nil {
			return nil, err
		}
		for _, s := range res.Servers {
			out = append(out, listed{id: s.ID, name: s.Name, tags: s.Tags, created: s.CreationDate})
		}
	case KindBaremetal:
		res, err := d.bm.ListServers(&baremetal.ListServersRequest{Zone: zone, ProjectID: &d.project, Tags: tags}, o...)
		if err != nil {
			return nil, err
		}
		for _, s := range res.Servers {
			out = append(out, listed{id: s.ID, name: s.Name, tags: s.Tags, created: s.CreatedAt, addr: bmFound(s).attrs["ipv4"]})
		}
	case KindIP:
		res, err := d.inst.ListIPs(&instance.ListIPsRequest{Zone: zone, Project: &d.project, Tags: tags}, o...)
		if err != nil {
			return nil, err
		}
		for _, ip := range res.IPs {
			out = append(out, listed{id: ip.ID, name: ip.Address.String(), tags: ip.Tags, addr: ip.Address.String()})
		}
	case KindVolume:
		res, err := d.blk.ListVolumes(&block.ListVolumesRequest{Zone: zone, ProjectID: &d.project, Tags: tags}, o...)
		if err != nil {
			return nil, err
		}
		for _, v := range res.Volumes {
			out = append(out, listed{id: v.ID, name: v.Name, tags: v.Tags, created: v.CreatedAt})
		}
	case KindSG:
		res, err := d.inst.ListSecurityGroups(&instance.ListSecurityGroupsRequest{Zone: zone, Project: &d.project, Tags: tags}, o...)
		if err != nil {
			return nil, err
		}
		for _, g := range res.SecurityGroups {
			out = append(out, listed{id: g.ID, name: g.Name, tags: g.Tags, created: g.CreationDate})
		}
	case KindSnapshot:
		res, err := d.blk.ListSnapshots(&block.ListSnapshotsRequest{Zone: zone, ProjectID: &d.project, Tags: tags}, o...)
		if err != nil {
			return nil, err
		}
		for _, s := range res.Snapshots {
			out = append(out, listed{id: s.ID, name: s.Name, tags: s.Tags, created: s.CreatedAt})
		}
	default:
		return nil, fmt.Errorf("scaleway: no list call for %s: listKind knows only the kinds the driver creates (a caller bug)", kind)
	}
	return out, nil
}
