package scaleway

import (
	"context"
	"fmt"
	"slices"
	"time"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/provision"
)

// ParkedTag marks a parked worker on Scaleway in place of the cluster's tags.
const ParkedTag = "pocbot-parked"

// ParkWorker retags the cluster's worker as parked: it no longer carries the cluster tag, so the
// down's sweep and the orphan scan leave it to the pool; the record is forgotten.
func (d *Driver) ParkWorker(ctx context.Context, r *provision.Run) error {
	rec, err := need(r, NodeWorker)
	if err != nil {
		return err
	}
	if err := d.tagBM(ctx, scw.Zone(rec.Zone), rec.ID, []string{ParkedTag}, ParkedName(rec.ID)); err != nil {
		return err
	}
	return r.Forget(ctx, NodeWorker)
}

// AdoptWorker makes the parked server id (in zone) the cluster's worker: it must exist, be ready
// and carry the parked tag (anything else is not provably the pool's), or already carry this
// cluster's worker tags (an adoption that stopped between the retag and the record: its rerun
// took its claim back); it gets the cluster's tags and is recorded as the worker node.
func (d *Driver) AdoptWorker(ctx context.Context, r *provision.Run, zone, id string) error {
	what := "adopt parked Elastic Metal server " + id
	s, err := d.bm.GetServer(&baremetal.GetServerRequest{Zone: scw.Zone(zone), ServerID: id}, ctxOpt(ctx))
	if err != nil {
		return classify(what, zone, err)
	}
	retagged := !slices.ContainsFunc(r.Tags(NodeWorker), func(t string) bool { return !provision.HasTag(s.Tags, t) })
	if s.Status != baremetal.ServerStatusReady || (!provision.HasTag(s.Tags, ParkedTag) && !retagged) {
		return fmt.Errorf("%s: it is %s with tags %v, not a ready server tagged %s", what, s.Status, s.Tags, ParkedTag)
	}
	if err := d.tagBM(ctx, scw.Zone(zone), id, r.Tags(NodeWorker), r.Name(r.Spec().BaremetalHostname)); err != nil {
		return err
	}
	f := bmFound(s)
	return record(ctx, r, NodeWorker, KindBaremetal, zone, f)
}

// OwnsWorker tells whether the recorded worker still carries this cluster's worker tags: one a
// stopped park retagged as parked (its pool entry written), or that another cluster adopted
// since, or gone, is no longer this cluster's to park or delete.
func (d *Driver) OwnsWorker(ctx context.Context, r *provision.Run) (bool, error) {
	rec, err := need(r, NodeWorker)
	if err != nil {
		return false, err
	}
	s, err := d.bm.GetServer(&baremetal.GetServerRequest{Zone: scw.Zone(rec.Zone), ServerID: rec.ID}, ctxOpt(ctx))
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, classify("read Elastic Metal worker "+rec.ID, rec.Zone, err)
	}
	return exactNode(s.Tags, r, NodeWorker), nil
}

// DeleteServer deletes an Elastic Metal server by id (a parked worker the pool gives up).
func (d *Driver) DeleteServer(ctx context.Context, r *provision.Run, zone, id string) error {
	return d.deleteBM(ctx, r, scw.Zone(zone), id)
}

// ParkedName is a parked worker's server name: "poc-parked-" and the start of its id, so that the
// console no longer shows it under the cluster that parked it (an adoption renames it again).
func ParkedName(id string) string { return "poc-parked-" + id[:min(len(id), 8)] }

// tagBM sets the server's tags and name in one update: who owns it and what it is called change
// together.
func (d *Driver) tagBM(ctx context.Context, zone scw.Zone, id string, tags []string, name string) error {
	what := "tag and rename Elastic Metal server " + id
	if _, err := d.bm.UpdateServer(&baremetal.UpdateServerRequest{Zone: zone, ServerID: id, Tags: &tags, Name: &name}, ctxOpt(ctx)); err != nil {
		return classify(what, string(zone), err)
	}
	return nil
}

// ParkedServer is a server tagged as parked, as the API lists it.
type ParkedServer struct {
	ID, Zone, Name string
	Created        time.Time
}

// ListParked lists the project's servers tagged pocbot-parked in zones.
func (d *Driver) ListParked(ctx context.Context, zones ...scw.Zone) ([]ParkedServer, error) {
	var out []ParkedServer
	for _, z := range zones {
		res, err := d.bm.ListServers(&baremetal.ListServersRequest{Zone: z, ProjectID: &d.project, Tags: []string{ParkedTag}}, ctxOpt(ctx), scw.WithAllPages())
		if err != nil {
			return nil, classify("list parked Elastic Metal servers", string(z), err)
		}
		for _, s := range res.Servers {
			if !provision.HasTag(s.Tags, ParkedTag) || s.Status == baremetal.ServerStatusDeleting {
				continue
			}
			p := ParkedServer{ID: s.ID, Zone: string(z), Name: s.Name}
			if s.CreatedAt != nil {
				p.Created = *s.CreatedAt
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// DeleteParked asks for the deletion of a parked server, only while it still carries the parked
// tag (an adopted one carries its cluster's tags and is left alone: deleted false). A server
// already gone counts as deleted.
func (d *Driver) DeleteParked(ctx context.Context, zone, id string) (bool, error) {
	what := "delete parked Elastic Metal server " + id
	s, err := d.bm.GetServer(&baremetal.GetServerRequest{Zone: scw.Zone(zone), ServerID: id}, ctxOpt(ctx))
	if notFound(err) {
		return true, nil
	}
	if err != nil {
		return false, classify(what, zone, err)
	}
	if !provision.HasTag(s.Tags, ParkedTag) {
		return false, nil
	}
	if _, err := d.bm.DeleteServer(&baremetal.DeleteServerRequest{Zone: scw.Zone(zone), ServerID: id}, ctxOpt(ctx)); err != nil && !notFound(err) {
		return false, classify(what, zone, err)
	}
	return true, nil
}
