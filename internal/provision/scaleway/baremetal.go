package scaleway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// offer finds the hourly offer of that exact name in the zone.
func (d *Driver) offer(ctx context.Context, zone scw.Zone, name string) (*baremetal.Offer, error) {
	res, err := d.bm.ListOffers(&baremetal.ListOffersRequest{Zone: zone, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly},
		ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return nil, classify("list Elastic Metal offers", string(zone), err)
	}
	for _, o := range res.Offers {
		if o.Name == name && o.SubscriptionPeriod == baremetal.OfferSubscriptionPeriodHourly {
			return o, nil
		}
	}
	return nil, fmt.Errorf("Elastic Metal offer %q has no hourly offer in %s: check baremetal_offer and the zone", name, zone)
}

// OfferStock is the stock of the hourly offer name in zone (available, low, empty): what a
// scheduled pause weighs before giving the worker back (register row em-stock).
func (d *Driver) OfferStock(ctx context.Context, zone, name string) (string, error) {
	o, err := d.offer(ctx, scw.Zone(zone), name)
	if err != nil {
		return "", err
	}
	return string(o.Stock), nil
}

func (d *Driver) workerNode() provision.Node {
	return provision.Node{
		Name: NodeWorker, Kind: KindBaremetal, Needs: []string{NodeSSHKey},
		Preflight: func(ctx context.Context, r *provision.Run) error {
			if _, ok := r.Resource(NodeWorker); ok {
				return nil // already ordered: stock no longer matters
			}
			zone, spec := zoneOf(r), r.Spec()
			o, err := d.offer(ctx, zone, spec.BaremetalOffer)
			if err != nil {
				return err
			}
			if o.Stock == baremetal.OfferStockEmpty {
				return fmt.Errorf("Elastic Metal offer %s is out of stock in %s: choose another offer (baremetal_offer) or zone, or retry later", spec.BaremetalOffer, zone)
			}
			return nil
		},
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone, spec := zoneOf(r), r.Spec()
			sname := r.Name(nameSuffix(spec, NodeWorker))
			what := fmt.Sprintf("Elastic Metal worker %q", sname)
			f, err := ensure(ctx, r, NodeWorker, KindBaremetal,
				func(ctx context.Context, id string) (*found, error) { return d.getBM(ctx, zone, id, what) },
				func(ctx context.Context) ([]*found, error) {
					return listFound(ctx, d.bm.ListServers, &baremetal.ListServersRequest{Zone: zone, ProjectID: &d.project, Tags: nodeTags(r, NodeWorker)},
						zone, what, func(res *baremetal.ListServersResponse) []*baremetal.Server { return res.Servers },
						func(s *baremetal.Server) bool {
							return exactNode(s.Tags, r, NodeWorker) && s.Status != baremetal.ServerStatusDeleting
						}, bmFound)
				},
				func(ctx context.Context) (*found, error) {
					o, err := d.offer(ctx, zone, spec.BaremetalOffer)
					if err != nil {
						return nil, err
					}
					// No install: the worker's disk is written from rescue (docs/seed.md, Work outside the state).
					s, err := d.bm.CreateServer(&baremetal.CreateServerRequest{
						Zone: zone, OfferID: o.ID, ProjectID: &d.project, Name: sname,
						Description: workerDescription(r.ClusterID()), Tags: r.Tags(NodeWorker), OptionIDs: []string{},
					}, ctxOpt(ctx))
					return made(err, "order "+what, zone, func() *found { return bmFound(s) })
				})
			if err != nil {
				return err
			}
			if f.status == string(baremetal.ServerStatusReady) {
				return nil
			}
			r.Note(NodeWorker, "server "+f.id+" is "+f.status)
			if f.status == string(baremetal.ServerStatusDelivering) {
				d.observePatchDelivering(ctx, r, zone, f.id, sname)
			}
			get := func(ctx context.Context) (*found, error) { return d.getBM(ctx, zone, f.id, what) }
			return awaitFound(ctx, r, NodeWorker, KindBaremetal, zone, what, "server "+f.id+" disappeared during delivery", get,
				func(v *found) (bool, error) {
					if v.status == string(baremetal.ServerStatusError) || v.status == string(baremetal.ServerStatusOutOfStock) {
						return false, fmt.Errorf("%s: delivery failed (%s): run down, then up, or choose another offer", what, v.status)
					}
					return v.status == string(baremetal.ServerStatusReady), nil
				})
		},
		Destroy: destroyRecorded(NodeWorker, d.deleteBM),
		// delivery is minutes on the real API
		Timeout: 0,
	}
}

func (d *Driver) getBM(ctx context.Context, zone scw.Zone, id, what string) (*found, error) {
	return getFound(ctx, d.bm.GetServer, &baremetal.GetServerRequest{Zone: zone, ServerID: id}, zone, what, func(s *baremetal.Server) *found {
		if s.Status == baremetal.ServerStatusDeleting {
			return nil
		}
		return bmFound(s)
	})
}

func bmFound(s *baremetal.Server) *found {
	f := &found{id: s.ID, status: string(s.Status), attrs: map[string]string{"name": s.Name}}
	for _, ip := range s.IPs {
		if ip != nil && ip.Version == baremetal.IPVersionIPv4 && ip.Address != nil {
			f.attrs["ipv4"] = ip.Address.String()
		}
	}
	return f
}

// deleteBM deletes the Elastic Metal server and waits until it is gone.
func (d *Driver) deleteBM(ctx context.Context, r *provision.Run, zone scw.Zone, id string) error {
	what := "delete Elastic Metal server " + id
	asked := false
	get := func(ctx context.Context) (*baremetal.Server, error) {
		return d.bm.GetServer(&baremetal.GetServerRequest{Zone: zone, ServerID: id}, ctxOpt(ctx))
	}
	name := func(s *baremetal.Server) string { return s.Name }
	return deleteWait(ctx, r, zone, KindBaremetal, id, what, get, name, func(ctx context.Context, s *baremetal.Server) (bool, error) {
		if s.Status != baremetal.ServerStatusDeleting || !asked {
			if _, err := d.bm.DeleteServer(&baremetal.DeleteServerRequest{Zone: zone, ServerID: id}, ctxOpt(ctx)); err != nil && !notFound(err) {
				return false, provision.Transient(classify(what, string(zone), err), 0)
			}
			asked = true
		}
		return false, nil
	})
}

// workerDescription is the Elastic Metal worker's description.
func workerDescription(cluster string) string { return "pocbot worker of cluster " + cluster }

// observePatchDelivering settles register row em-patch-delivering on first contact, at the cost
// of one call of an order the up pays anyway: a PATCH of the delivering server that changes
// nothing (its own name). Neither answer changes the up (the bot names and tags the server in
// its order); one that tells nothing (a 5xx, a timeout, a permission) is only logged.
func (d *Driver) observePatchDelivering(ctx context.Context, r *provision.Run, zone scw.Zone, id, name string) {
	_, err := d.bm.UpdateServer(&baremetal.UpdateServerRequest{Zone: zone, ServerID: id, Name: &name}, ctxOpt(ctx))
	switch {
	case err == nil:
		r.Observe(NodeWorker, assume.EMPatchDelivering, "accepted", "a PATCH of server "+id+" while delivering was accepted (it changed nothing)")
	case refusedRequest(err):
		r.Observe(NodeWorker, assume.EMPatchDelivering, "refused", "a PATCH of server "+id+" while delivering was refused: "+err.Error())
	default:
		r.Logger().Debug("a PATCH of the delivering worker told nothing of em-patch-delivering", "server", id, "err", err)
	}
}

// refusedRequest is an answer that refuses the request for what it asks (of a server in its
// state, of a size): a 4xx other than authentication, permission, absence and rate (the CLI's
// recordings answer reboot, start and stop with 400 "Server is not delivered"; invalid
// arguments or a transient state are as plausible).
func refusedRequest(err error) bool {
	var resp *scw.ResponseError
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests:
			return false
		}
		return resp.StatusCode/100 == 4
	}
	var invalid *scw.InvalidArgumentsError
	var transient *scw.TransientStateError
	return errors.As(err, &invalid) || errors.As(err, &transient)
}
