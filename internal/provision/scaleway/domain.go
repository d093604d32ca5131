package scaleway

import (
	"context"
	"fmt"
	"slices"

	"github.com/pocbot/pocbot/internal/provision"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// DNS records have no tags: the driver marks its own with the exact cluster tag in the record
// comment, and touches no record without it.
func (d *Driver) dnsNode(ipNodes []string) provision.Node {
	return provision.Node{
		Name: NodeDNS, Kind: KindDNS, Needs: append(slices.Clone(ipNodes), NodeWorker),
		Apply: func(ctx context.Context, r *provision.Run) error {
			spec := r.Spec()
			cps, err := ipAddrs(r, ipNodes)
			if err != nil {
				return err
			}
			w, err := ipAddrs(r, []string{NodeWorker})
			if err != nil {
				return err
			}
			want := map[string][]string{spec.APIHostname: cps, spec.EdgeHostname: w}
			ours, err := d.ourRecords(ctx, spec.DNSZone, r.ClusterID(), want)
			if err != nil {
				return err
			}
			have := map[string][]string{}
			for _, rec := range ours {
				have[rec.Name] = append(have[rec.Name], rec.Data)
			}
			same := len(have) == len(want)
			for n, ips := range want {
				h := slices.Clone(have[n])
				slices.Sort(h)
				wi := slices.Clone(ips)
				slices.Sort(wi)
				same = same && slices.Equal(h, wi)
			}
			if !same {
				comment := provision.ClusterTag(r.ClusterID())
				var changes []*domain.RecordChange
				for _, rec := range ours {
					changes = append(changes, &domain.RecordChange{Delete: &domain.RecordChangeDelete{ID: scw.StringPtr(rec.ID)}})
				}
				var add []*domain.Record
				for n, ips := range want {
					for _, ip := range ips {
						add = append(add, &domain.Record{Name: n, Type: domain.RecordTypeA, Data: ip, TTL: uint32(spec.DNSTTL), Comment: &comment})
					}
				}
				changes = append(changes, &domain.RecordChange{Add: &domain.RecordChangeAdd{Records: add}})
				if _, err := d.dom.UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: spec.DNSZone, Changes: changes,
					DisallowNewZoneCreation: true}, ctxOpt(ctx)); err != nil {
					return classify(fmt.Sprintf("set DNS records %s and %s in zone %s", spec.APIHostname, spec.EdgeHostname, spec.DNSZone), spec.Zone, err)
				}
			}
			return record(ctx, r, NodeDNS, KindDNS, "", &found{id: spec.DNSZone, status: "ready",
				attrs: map[string]string{"api": spec.APIHostname + "." + spec.DNSZone, "edge": spec.EdgeHostname + "." + spec.DNSZone}})
		},
		Destroy: func(ctx context.Context, r *provision.Run) error {
			// Runs even without a record (a crash right after the PATCH): the records are
			// recognised by the node IPs, still in state since this node goes before the IPs.
			spec := r.Spec()
			want := map[string][]string{}
			if cps, err := ipAddrs(r, ipNodes); err == nil {
				want[spec.APIHostname] = cps
			}
			if w, err := ipAddrs(r, []string{NodeWorker}); err == nil {
				want[spec.EdgeHostname] = w
			}
			return d.deleteRecords(ctx, r, spec.DNSZone, want)
		},
	}
}

// ourRecords lists the zone's records of this cluster: the comment is exactly the cluster's tag,
// or the name is one of ours and the data one of our node IPs (reserved IPs belong to one cluster
// only; and an API or emulator that drops comments must not make the driver lose its records).
func (d *Driver) ourRecords(ctx context.Context, zone, cluster string, mine map[string][]string) ([]*domain.Record, error) {
	res, err := d.dom.ListDNSZoneRecords(&domain.ListDNSZoneRecordsRequest{DNSZone: zone}, ctxOpt(ctx), scw.WithAllPages())
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("list DNS records of zone "+zone, "", err)
	}
	tag := provision.ClusterTag(cluster)
	var out []*domain.Record
	for _, rec := range res.Records {
		if (rec.Comment != nil && *rec.Comment == tag) || (rec.Type == domain.RecordTypeA && slices.Contains(mine[rec.Name], rec.Data)) {
			out = append(out, rec)
		}
	}
	return out, nil
}

func (d *Driver) deleteRecords(ctx context.Context, r *provision.Run, zone string, mine map[string][]string) error {
	ours, err := d.ourRecords(ctx, zone, r.ClusterID(), mine)
	if err != nil || len(ours) == 0 {
		return err
	}
	var changes []*domain.RecordChange
	for _, rec := range ours {
		changes = append(changes, &domain.RecordChange{Delete: &domain.RecordChangeDelete{ID: scw.StringPtr(rec.ID)}})
	}
	if _, err := d.dom.UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: zone, Changes: changes,
		DisallowNewZoneCreation: true}, ctxOpt(ctx)); err != nil && !notFound(err) {
		return classify("delete DNS records of cluster "+r.ClusterID()+" in zone "+zone, "", err)
	}
	for _, rec := range ours {
		r.Deleted(KindDNS, rec.ID, rec.Name+"."+zone+" A "+rec.Data)
	}
	return nil
}
