package scaleway

import (
	"context"
	"errors"
	"fmt"

	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// Headroom reads, without creating anything, what an up of spec would need beyond what st
// records already (each need keyed by what its quota counts: preflight.Key…), the organization's
// quotas as IAM lists them (none, and why, when they cannot be read: register row quota-read),
// the project's current usage and the stock of the candidate worker offers (in order; none when
// the worker is recorded). The offers come back unpriced and not marked for adoption: the caller
// knows prices and the pool. It is what the up's pre-flight and `bot doctor` read.
func (d *Driver) Headroom(ctx context.Context, spec provision.Spec, st *provision.State, offers []string) (preflight.Input, error) {
	zone := scw.Zone(spec.Zone)
	has := func(node string) bool {
		if st == nil {
			return false
		}
		_, ok := st.Resources[node]
		return ok
	}
	missing := func(node func(int) string) int {
		n := 0
		for i := range spec.CPCount {
			if !has(node(i)) {
				n++
			}
		}
		return n
	}
	one := func(node string) int {
		if has(node) {
			return 0
		}
		return 1
	}
	keys := one(NodeSSHKey)
	if spec.SSHPublicKey != "" {
		keys += one(NodePersonKey)
	}
	in := preflight.Input{
		Needs: []preflight.Need{
			{Key: spec.CPInstanceType, What: spec.CPInstanceType + " Instances", Count: missing(NodeServer)},
			{Key: preflight.KeyIPs, What: "Instance flexible IPs", Count: missing(NodeIP)},
			{Key: preflight.KeyVolumes, What: "Block Storage volumes", Count: missing(NodeVolume)},
			{Key: preflight.KeySecurityGroups, What: "security groups", Count: one(NodeSecGroup)},
			{Key: preflight.KeySnapshots, What: "snapshots", Count: one(NodeSnapshot)},
			{Key: preflight.KeySSHKeys, What: "IAM SSH keys", Count: keys},
		},
		Usage: map[string]int{},
	}
	if has(NodeWorker) {
		offers = nil
	}
	in.Listed, in.Unread = d.readQuotas(ctx, zone)
	if err := d.readUsage(ctx, zone, spec.CPInstanceType, in.Usage); err != nil {
		return in, err
	}
	if len(offers) == 0 {
		return in, nil
	}
	res, err := d.bm.ListOffers(&baremetal.ListOffersRequest{Zone: zone, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly},
		ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return in, classify("list Elastic Metal offers", string(zone), err)
	}
	for _, name := range offers {
		var o *baremetal.Offer
		for _, x := range res.Offers {
			if x.Name == name && x.SubscriptionPeriod == baremetal.OfferSubscriptionPeriodHourly {
				o = x
			}
		}
		if o == nil {
			return in, fmt.Errorf("Elastic Metal offer %q has no hourly offer in %s: check worker_offers and the zone", name, zone)
		}
		in.Offers = append(in.Offers, preflight.Offer{Name: o.Name, QuotaName: o.QuotaName, Stock: string(o.Stock)})
	}
	servers, err := d.bm.ListServers(&baremetal.ListServersRequest{Zone: zone, ProjectID: &d.project}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return in, classify("list Elastic Metal servers", string(zone), err)
	}
	// Every server of the offer counts, parked ones included: they hold the offer's quota.
	for _, s := range servers.Servers {
		for _, o := range res.Offers {
			if o.ID == s.OfferID || o.Name == s.OfferName {
				in.Usage[o.Name]++
				break
			}
		}
	}
	return in, nil
}

// readQuotas lists the organization's quotas, each with its limit in zone. They may not be read
// (register row quota-read): without an organization id (SCW_DEFAULT_ORGANIZATION_ID), with a key
// lacking the organization-scoped OrganizationReadOnly, or when the call fails; unread says why,
// and the pre-flight weighs the repository's or the documented numbers instead. The API still
// refuses what exceeds a quota.
func (d *Driver) readQuotas(ctx context.Context, zone scw.Zone) (listed []preflight.Listed, unread string) {
	if d.org == "" {
		return nil, "SCW_DEFAULT_ORGANIZATION_ID is not set"
	}
	res, err := d.iam.ListQuota(&iam.ListQuotaRequest{OrganizationID: d.org}, ctxOpt(ctx), scw.WithAllPages())
	var perm *scw.PermissionsDeniedError
	switch {
	case errors.As(err, &perm):
		return nil, "the bot's key lacks OrganizationReadOnly on the organization; `bot init --iam` adds it"
	case err != nil:
		return nil, "the call failed: " + err.Error()
	}
	for _, q := range res.Quota {
		l := quotaIn(q, zone)
		l.Name, l.PrettyName = q.Name, q.PrettyName
		listed = append(listed, l)
	}
	return listed, ""
}

// quotaIn is the quota's limit that applies in zone: the zone's, else its region's, else the
// global one, else the deprecated single limit.
func quotaIn(q *iam.Quotum, zone scw.Zone) preflight.Listed {
	region, _ := zone.Region()
	pick := func(l *iam.QuotumLimit) preflight.Listed {
		if l.Unlimited != nil && *l.Unlimited {
			return preflight.Listed{Unlimited: true}
		}
		if l.Limit != nil {
			return preflight.Listed{Limit: int64(*l.Limit)}
		}
		return preflight.Listed{Unlimited: true}
	}
	for _, match := range []func(*iam.QuotumLimit) bool{
		func(l *iam.QuotumLimit) bool { return l.Zone != nil && *l.Zone == zone },
		func(l *iam.QuotumLimit) bool { return l.Region != nil && *l.Region == region },
		func(l *iam.QuotumLimit) bool { return l.Global != nil && *l.Global },
	} {
		for _, l := range q.Limits {
			if match(l) {
				return pick(l)
			}
		}
	}
	if q.Unlimited != nil && *q.Unlimited {
		return preflight.Listed{Unlimited: true}
	}
	if q.Limit != nil {
		return preflight.Listed{Limit: int64(*q.Limit)}
	}
	return preflight.Listed{Unlimited: true}
}

// readUsage counts what the project holds of each product the cluster creates (the quotas are
// the organization's: another project's use shows only as a refusal during the run).
func (d *Driver) readUsage(ctx context.Context, zone scw.Zone, cpType string, out map[string]int) error {
	srv, err := d.inst.ListServers(&instance.ListServersRequest{Zone: zone, Project: &d.project, CommercialType: &cpType}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("list Instances", string(zone), err)
	}
	for _, s := range srv.Servers {
		if s.CommercialType == cpType {
			out[cpType]++
		}
	}
	for _, c := range []struct{ kind, quota, what string }{
		{KindIP, preflight.KeyIPs, "flexible IPs"}, {KindSG, preflight.KeySecurityGroups, "security groups"},
		{KindVolume, preflight.KeyVolumes, "volumes"}, {KindSnapshot, preflight.KeySnapshots, "snapshots"},
	} {
		items, err := d.listKind(ctx, zone, c.kind, nil)
		if err != nil {
			return classify("list "+c.what, string(zone), err)
		}
		out[c.quota] = len(items)
	}
	keys, err := d.iam.ListSSHKeys(&iam.ListSSHKeysRequest{ProjectID: &d.project}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("list IAM SSH keys", "", err)
	}
	out[preflight.KeySSHKeys] = len(keys.SSHKeys)
	return nil
}
