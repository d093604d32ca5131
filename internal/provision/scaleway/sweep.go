package scaleway

import (
	"context"
	"errors"
	"fmt"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// sweep deletes whatever still carries the cluster's EXACT tag, in the order the API demands:
// servers (terminate / delete, wait gone), then IPs, volumes and the group; the Elastic Metal
// server; the IAM keys by exact name; DNS records by exact comment or, the comment not echoed
// (register row dns-comment), by the cluster's names, type A and the address of a resource the
// sweep found by the cluster's exact tag. Shared snapshots (tagged pocbot-shared) are never
// touched.
func (d *Driver) sweep(ctx context.Context, r *provision.Run) error {
	zone, spec, id := zoneOf(r), r.Spec(), r.ClusterID()
	tag := []string{provision.ClusterTag(id)}
	var errs []error
	var addrs []string // of the resources found by the cluster's tag: what its DNS records point at

	for _, kind := range sweptKinds {
		items, err := d.listKind(ctx, zone, kind, tag)
		if err != nil {
			return classify("sweep: list "+kindNames[kind], string(zone), err)
		}
		for _, it := range items {
			if provision.OwnedBy(it.tags, id) {
				if it.addr != "" {
					addrs = append(addrs, it.addr)
				}
				errs = append(errs, d.deleteKind(ctx, r, zone, kind, it))
			}
		}
	}
	for _, role := range []string{"bot", "person"} {
		name := r.Name(role)
		keys, err := d.listKeys(ctx, name)
		if err != nil {
			return classify("sweep: list IAM SSH keys", "", err)
		}
		for _, k := range keys {
			errs = append(errs, d.deleteKey(ctx, r, k.ID, name))
		}
	}
	if spec.DNSZone != "" {
		// by recorded id or exact comment: nobody else's record, whatever its name; or by name,
		// type and an address of the cluster's tagged resources.
		errs = append(errs, d.deleteRecords(ctx, r, spec.DNSZone, nil, addrs...))
	}
	return errors.Join(errs...)
}

// deleteKind deletes one listed resource of kind, as the sweep does.
func (d *Driver) deleteKind(ctx context.Context, r *provision.Run, zone scw.Zone, kind string, it listed) error {
	switch kind {
	case KindServer:
		return d.deleteServer(ctx, r, zone, it.id)
	case KindBaremetal:
		return d.deleteBM(ctx, r, zone, it.id)
	case KindIP:
		return d.deleteIP(ctx, r, zone, it.id, "swept")
	case KindVolume:
		return d.deleteVolume(ctx, r, zone, it.id)
	case KindSG:
		return d.deleteSG(ctx, r, zone, it.id, it.name)
	}
	return fmt.Errorf("scaleway: the sweep does not delete %s %s", kind, it.id)
}
