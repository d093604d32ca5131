package scaleway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// The quota names the pre-flight looks up. Scaleway documents the default quotas
// (preflight.QuotasPage) but not the names its IAM API gives them, the Elastic Metal offers'
// excepted (Offer.QuotaName): these are the emulator's reading (internal/sim/scaleway,
// orgquota.go), and a quota the API does not list under them is shown "not listed" and not
// checked — a quota refused during the run still stops it, and the down cleans up.
const (
	QuotaIPs            = "instance_ips"
	QuotaSecurityGroups = "security_groups"
	QuotaVolumes        = "block_volumes"
	QuotaSnapshots      = "block_snapshots"
	QuotaSSHKeys        = "iam_ssh_keys"
)

// InstanceTypeQuota names the quota of one Instance commercial type.
func InstanceTypeQuota(commercialType string) string {
	return "instance_servers_" + strings.ToLower(strings.ReplaceAll(commercialType, "-", "_"))
}

// Headroom reads, without creating anything, what an up of spec would need beyond what st
// records already, the organization's quotas, the project's current usage and the stock of the
// candidate worker offers (in order; none when the worker is recorded). The offers come back
// unpriced and not marked for adoption: the caller knows prices and the pool. It is what the up's
// pre-flight and `bot doctor` read.
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
			{Quota: InstanceTypeQuota(spec.CPInstanceType), What: spec.CPInstanceType + " Instances", Count: missing(NodeServer)},
			{Quota: QuotaIPs, What: "Instance flexible IPs", Count: missing(NodeIP)},
			{Quota: QuotaVolumes, What: "Block Storage volumes", Count: missing(NodeVolume)},
			{Quota: QuotaSecurityGroups, What: "security groups", Count: one(NodeSecGroup)},
			{Quota: QuotaSnapshots, What: "snapshots", Count: one(NodeSnapshot)},
			{Quota: QuotaSSHKeys, What: "IAM SSH keys", Count: keys},
		},
		Quotas: map[string]preflight.Quota{},
		Usage:  map[string]int{},
	}
	if has(NodeWorker) {
		offers = nil
	}
	if err := d.readQuotas(ctx, zone, in.Quotas); err != nil {
		return in, err
	}
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
				in.Usage[o.QuotaName]++
				break
			}
		}
	}
	return in, nil
}

// readQuotas lists the organization's quotas. Without an organization id
// (SCW_DEFAULT_ORGANIZATION_ID), or with a key that may not read them, there are none (every
// quota "not listed"), not a refusal: the API still refuses what exceeds them.
func (d *Driver) readQuotas(ctx context.Context, zone scw.Zone, out map[string]preflight.Quota) error {
	if d.org == "" {
		return nil
	}
	res, err := d.iam.ListQuota(&iam.ListQuotaRequest{OrganizationID: d.org}, ctxOpt(ctx), scw.WithAllPages())
	var perm *scw.PermissionsDeniedError
	if errors.As(err, &perm) {
		return nil
	}
	if err != nil {
		return classify("list the organization's quotas", string(zone), err)
	}
	for _, q := range res.Quota {
		out[q.Name] = quotaIn(q, zone)
	}
	return nil
}

// quotaIn is the quota's limit that applies in zone: the zone's, else its region's, else the
// global one, else the deprecated single limit.
func quotaIn(q *iam.Quotum, zone scw.Zone) preflight.Quota {
	region, _ := zone.Region()
	pick := func(l *iam.QuotumLimit) preflight.Quota {
		if l.Unlimited != nil && *l.Unlimited {
			return preflight.Quota{Unlimited: true}
		}
		if l.Limit != nil {
			return preflight.Quota{Limit: int64(*l.Limit)}
		}
		return preflight.Quota{Unlimited: true}
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
		return preflight.Quota{Unlimited: true}
	}
	if q.Limit != nil {
		return preflight.Quota{Limit: int64(*q.Limit)}
	}
	return preflight.Quota{Unlimited: true}
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
			out[InstanceTypeQuota(cpType)]++
		}
	}
	for _, c := range []struct{ kind, quota, what string }{
		{KindIP, QuotaIPs, "flexible IPs"}, {KindSG, QuotaSecurityGroups, "security groups"},
		{KindVolume, QuotaVolumes, "volumes"}, {KindSnapshot, QuotaSnapshots, "snapshots"},
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
	out[QuotaSSHKeys] = len(keys.SSHKeys)
	return nil
}
