package scaleway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pocbot/pocbot/internal/provision"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// DNS records carry no tags, and a zone is shared with whatever else its owner serves, so the
// driver touches a record only when it is provably the cluster's own:
//   - its id is recorded in the cluster's state (the dns-records node's attrDNSRecordIDs), or
//   - it carries the cluster's exact tag as its comment and one of the cluster's names (a crash
//     between the PATCH that created it and the save of its id). Only the bot writes that
//     comment; whoever else could write it can already edit the zone, so it proves nothing a
//     GitHub user could forge; or
//   - the answer carries no comment at all (register row dns-comment: every public recording
//     answers comment: null, whatever was written) and the record is what the bot writes: one
//     of the cluster's names, type A, data one of the cluster's recorded addresses. A record
//     carrying another comment is never the cluster's.
//
// The names are per cluster (provision.Spec.DNSNames): a name that already exists in the zone and
// is not provably the cluster's is never replaced, joined or deleted — the node refuses, before
// anything is created (Preflight) and again right before it writes.
const attrDNSRecordIDs = "record_ids"

func (d *Driver) dnsNode(ipNodes []string) provision.Node {
	return provision.Node{
		Name: NodeDNS, Kind: KindDNS, Needs: append(slices.Clone(ipNodes), NodeWorker),
		Preflight: func(ctx context.Context, r *provision.Run) error {
			_, err := d.ownRecords(ctx, r)
			return err
		},
		Apply: func(ctx context.Context, r *provision.Run) error {
			spec := r.Spec()
			names := spec.DNSNames(r.ClusterID())
			cps, err := ipAddrs(r, ipNodes)
			if err != nil {
				return err
			}
			w, err := ipAddrs(r, []string{NodeWorker})
			if err != nil {
				return err
			}
			want := map[string][]string{names.API: cps, names.Edge: w}
			ours, err := d.ownRecords(ctx, r)
			if err != nil {
				return err
			}
			ids := recordIDs(ours)
			if !sameRecords(ours, want) {
				comment := provision.ClusterTag(r.ClusterID())
				var changes []*domain.RecordChange
				for _, rec := range ours {
					changes = append(changes, &domain.RecordChange{Delete: &domain.RecordChangeDelete{ID: scw.StringPtr(rec.ID)}})
				}
				var add []*domain.Record
				for _, n := range []string{names.API, names.Edge} {
					for _, ip := range want[n] {
						add = append(add, &domain.Record{Name: n, Type: domain.RecordTypeA, Data: ip, TTL: uint32(spec.DNSTTL), Comment: &comment})
					}
				}
				changes = append(changes, &domain.RecordChange{Add: &domain.RecordChangeAdd{Records: add}})
				res, err := d.dom.UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: spec.DNSZone, Changes: changes,
					DisallowNewZoneCreation: true, ReturnAllRecords: scw.BoolPtr(false)}, ctxOpt(ctx))
				if err != nil {
					return classify(fmt.Sprintf("set DNS records %s and %s", spec.FQDN(names.API), spec.FQDN(names.Edge)), spec.Zone, err)
				}
				// Even with return_all_records false, only what is provably this cluster's is
				// recorded: its names and its comment, or, with no comment in the answer, exactly
				// the records just written. A record id recorded here is one a down deletes, so an
				// answer listing the whole zone must not make the zone the cluster's.
				ids = recordIDs(madeBy(res.Records, comment, want))
			}
			return record(ctx, r, NodeDNS, KindDNS, "", &found{id: spec.DNSZone, status: "ready",
				attrs: map[string]string{"api": spec.FQDN(names.API), "edge": spec.FQDN(names.Edge), attrDNSRecordIDs: ids}})
		},
		Destroy: func(ctx context.Context, r *provision.Run) error {
			// Runs even without a record (a crash right after the PATCH): such records carry the
			// cluster's comment. Someone else's record under one of our names is left alone.
			return d.deleteRecords(ctx, r, r.Spec().DNSZone, nil)
		},
	}
}

// EdgeDNSNode is a pause's node for the edge records when the reserved IPs stay: the worker's
// address leaves the cluster (the server is deleted, or parked and then maybe adopted by another
// cluster), the control planes' stay. Its destroy, which runs before the worker's (it needs the
// worker), deletes the cluster's own records under the edge name only, and takes their ids out of
// the dns-records node's record, which keeps the API records'; the resume's dns-records node
// writes the edge record again with the worker's new address. The pause is a Down, so Apply is
// never called.
func (d *Driver) EdgeDNSNode() provision.Node {
	return provision.Node{
		Name: NodeDNSEdge, Kind: KindDNS, Needs: []string{NodeWorker},
		Apply: func(context.Context, *provision.Run) error {
			return errors.New("the edge DNS node of a pause is only destroyed")
		},
		Destroy: func(ctx context.Context, r *provision.Run) error {
			edge := r.Spec().DNSNames(r.ClusterID()).Edge
			return d.deleteRecords(ctx, r, r.Spec().DNSZone, func(rec *domain.Record) bool { return rec.Name == edge })
		},
	}
}

// sameRecords tells whether the records are exactly the wanted A records.
func sameRecords(have []*domain.Record, want map[string][]string) bool {
	got := map[string][]string{}
	for _, rec := range have {
		if rec.Type != domain.RecordTypeA {
			return false
		}
		got[rec.Name] = append(got[rec.Name], rec.Data)
	}
	if len(got) != len(want) {
		return false
	}
	for n, ips := range want {
		h, w := slices.Clone(got[n]), slices.Clone(ips)
		slices.Sort(h)
		slices.Sort(w)
		if !slices.Equal(h, w) {
			return false
		}
	}
	return true
}

// madeBy keeps the records under one of the cluster's names (the keys of want) that carry its
// exact comment, or that carry none and are what was just written: type A, data one of want's.
func madeBy(recs []*domain.Record, comment string, want map[string][]string) []*domain.Record {
	var out []*domain.Record
	for _, rec := range recs {
		if _, ours := want[rec.Name]; ours && (rec.Comment != nil && *rec.Comment == comment || written(rec, want[rec.Name])) {
			out = append(out, rec)
		}
	}
	return out
}

// written tells whether rec, answered without a comment, is an A record whose data is one of
// addrs: a record the bot writes, recognised by its data when the comment is not echoed.
func written(rec *domain.Record, addrs []string) bool {
	return (rec.Comment == nil || *rec.Comment == "") && rec.Type == domain.RecordTypeA && slices.Contains(addrs, rec.Data)
}

// clusterAddrs are the addresses the cluster's state records (its reserved IPs, its worker's):
// the data of every record the bot writes for it.
func clusterAddrs(r *provision.Run) []string {
	var out []string
	nodes := []string{NodeWorker}
	for i := range r.Spec().CPCount {
		nodes = append(nodes, NodeIP(i))
	}
	for _, n := range nodes {
		if res, ok := r.Resource(n); ok {
			for _, k := range []string{"address", "ipv4"} {
				if a := res.Attrs[k]; a != "" {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

func recordIDs(recs []*domain.Record) string {
	ids := make([]string, 0, len(recs))
	for _, rec := range recs {
		ids = append(ids, rec.ID)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// ownRecords lists the records under the cluster's names and returns those that are provably the
// cluster's; any other record under one of those names is refused with an error that names it
// (never adopted, never replaced). A zone the API key cannot see is refused too.
func (d *Driver) ownRecords(ctx context.Context, r *provision.Run) ([]*domain.Record, error) {
	spec := r.Spec()
	names := spec.DNSNames(r.ClusterID())
	recs, err := d.zoneRecords(ctx, spec.DNSZone)
	if err != nil {
		return nil, err
	}
	var ours []*domain.Record
	for _, rec := range recs {
		if rec.Name != names.API && rec.Name != names.Edge {
			continue
		}
		if !d.provablyOurs(r, rec) {
			return nil, fmt.Errorf("DNS name %s already exists in zone %s (%s record %s, id %s) and is not this cluster's: "+
				"pocbot never replaces a record it did not create — remove that record, or use another zone (dns_zones in .github/poc.yml)",
				spec.FQDN(rec.Name), spec.DNSZone, rec.Type, rec.Data, rec.ID)
		}
		ours = append(ours, rec)
	}
	return ours, nil
}

func (d *Driver) provablyOurs(r *provision.Run, rec *domain.Record) bool {
	if res, ok := r.Resource(NodeDNS); ok {
		for _, id := range strings.Split(res.Attrs[attrDNSRecordIDs], ",") {
			if id != "" && id == rec.ID {
				return true
			}
		}
	}
	return rec.Comment != nil && *rec.Comment == provision.ClusterTag(r.ClusterID()) || written(rec, clusterAddrs(r))
}

// zoneRecords lists every record of the zone (all pages). A zone that does not exist, or that the
// API key's project cannot see, is a permanent error: the bot never creates zones.
func (d *Driver) zoneRecords(ctx context.Context, zone string) ([]*domain.Record, error) {
	res, err := d.dom.ListDNSZoneRecords(&domain.ListDNSZoneRecordsRequest{DNSZone: zone}, ctxOpt(ctx), scw.WithAllPages())
	if notFound(err) {
		return nil, fmt.Errorf("DNS zone %s does not exist in the bot's Scaleway project: create it there, or use another zone (dns_zones in .github/poc.yml): %w", zone, err)
	}
	var perm *scw.PermissionsDeniedError
	if errors.As(err, &perm) {
		return nil, fmt.Errorf("DNS zone %s is not reachable with the bot's API key (it belongs to another Scaleway project, or the key lacks DNS permissions): "+
			"move the zone into the bot's project or use one of its zones (dns_zones in .github/poc.yml): %w", zone, err)
	}
	if err != nil {
		return nil, classify("list DNS records of zone "+zone, "", err)
	}
	return res.Records, nil
}

// deleteRecords removes the cluster's own records from zone (the sweep's and Destroy's way), and
// nothing else; only, when not nil, narrows them (the edge's, for a pause), and what it deleted
// then leaves the dns-records node's recorded ids. tagged are addresses of resources the caller
// found by the cluster's exact tag (a sweep without a state): a record without a comment under one
// of the cluster's names pointing at one of them is the cluster's.
func (d *Driver) deleteRecords(ctx context.Context, r *provision.Run, zone string, only func(*domain.Record) bool, tagged ...string) error {
	recs, err := d.dom.ListDNSZoneRecords(&domain.ListDNSZoneRecordsRequest{DNSZone: zone}, ctxOpt(ctx), scw.WithAllPages())
	if notFound(err) {
		return nil
	}
	if err != nil {
		return classify("list DNS records of zone "+zone, "", err)
	}
	names := r.Spec().DNSNames(r.ClusterID())
	tag := provision.ClusterTag(r.ClusterID())
	var ours []*domain.Record
	for _, rec := range recs.Records {
		// Any name when the record carries the cluster's comment: a record the cluster made is
		// its own even under an older naming. A recorded id alone counts only under one of the
		// cluster's names, so that a state that once recorded a whole zone's answer (before
		// return_all_records was sent) cannot make a down delete the zone.
		byComment := rec.Comment != nil && *rec.Comment == tag
		byName := rec.Name == names.API || rec.Name == names.Edge
		if (byComment || (byName && (d.provablyOurs(r, rec) || written(rec, tagged)))) && (only == nil || only(rec)) {
			ours = append(ours, rec)
		}
	}
	if len(ours) == 0 {
		return nil
	}
	var changes []*domain.RecordChange
	for _, rec := range ours {
		changes = append(changes, &domain.RecordChange{Delete: &domain.RecordChangeDelete{ID: scw.StringPtr(rec.ID)}})
	}
	if _, err := d.dom.UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: zone, Changes: changes,
		DisallowNewZoneCreation: true, ReturnAllRecords: scw.BoolPtr(false)}, ctxOpt(ctx)); err != nil && !notFound(err) {
		return classify("delete DNS records of cluster "+r.ClusterID()+" in zone "+zone, "", err)
	}
	for _, rec := range ours {
		r.Deleted(KindDNS, rec.ID, rec.Name+"."+zone+" A "+rec.Data)
	}
	if only == nil {
		return nil // every record of the cluster's is gone: its node's record goes with it
	}
	return forgetRecordIDs(ctx, r, ours)
}

// forgetRecordIDs takes deleted records' ids out of the dns-records node's record (when it has
// one): a record id kept there is one a later run takes for the cluster's.
func forgetRecordIDs(ctx context.Context, r *provision.Run, gone []*domain.Record) error {
	res, ok := r.Resource(NodeDNS)
	if !ok {
		return nil
	}
	var keep []string
	for _, id := range strings.Split(res.Attrs[attrDNSRecordIDs], ",") {
		if id != "" && !slices.ContainsFunc(gone, func(rec *domain.Record) bool { return rec.ID == id }) {
			keep = append(keep, id)
		}
	}
	res.Attrs = maps.Clone(res.Attrs)
	res.Attrs[attrDNSRecordIDs] = strings.Join(keep, ",")
	return r.Record(ctx, NodeDNS, res)
}
