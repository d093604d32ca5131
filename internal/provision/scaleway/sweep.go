package scaleway

import (
	"context"
	"errors"

	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// sweep deletes whatever still carries the cluster's EXACT tag, in the order the API demands:
// servers (terminate / delete, wait gone), then IPs, volumes and the group; the Elastic Metal
// server; the IAM keys by exact name; DNS records by exact comment. Shared snapshots (tagged
// pocbot-shared) are never touched.
func (d *Driver) sweep(ctx context.Context, r *provision.Run) error {
	zone, spec, id := zoneOf(r), r.Spec(), r.ClusterID()
	tag := []string{provision.ClusterTag(id)}
	var errs []error

	srv, err := d.inst.ListServers(&instance.ListServersRequest{Zone: zone, Project: &d.project, Tags: tag}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("sweep: list servers", string(zone), err)
	}
	for _, s := range srv.Servers {
		if provision.OwnedBy(s.Tags, id) {
			errs = append(errs, d.deleteServer(ctx, r, zone, s.ID))
		}
	}
	bms, err := d.bm.ListServers(&baremetal.ListServersRequest{Zone: zone, ProjectID: &d.project, Tags: tag}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("sweep: list Elastic Metal servers", string(zone), err)
	}
	for _, s := range bms.Servers {
		if provision.OwnedBy(s.Tags, id) {
			errs = append(errs, d.deleteBM(ctx, r, zone, s.ID))
		}
	}
	ips, err := d.inst.ListIPs(&instance.ListIPsRequest{Zone: zone, Project: &d.project, Tags: tag}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("sweep: list IPs", string(zone), err)
	}
	for _, ip := range ips.IPs {
		if provision.OwnedBy(ip.Tags, id) {
			errs = append(errs, d.deleteIP(ctx, r, zone, ip.ID, "swept"))
		}
	}
	vols, err := d.blk.ListVolumes(&block.ListVolumesRequest{Zone: zone, ProjectID: &d.project, Tags: tag}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("sweep: list volumes", string(zone), err)
	}
	for _, v := range vols.Volumes {
		if provision.OwnedBy(v.Tags, id) {
			errs = append(errs, d.deleteVolume(ctx, r, zone, v.ID))
		}
	}
	sgs, err := d.inst.ListSecurityGroups(&instance.ListSecurityGroupsRequest{Zone: zone, Project: &d.project, Tags: tag}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return classify("sweep: list security groups", string(zone), err)
	}
	for _, sg := range sgs.SecurityGroups {
		if provision.OwnedBy(sg.Tags, id) {
			errs = append(errs, d.deleteSG(ctx, r, zone, sg.ID, sg.Name))
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
		// by recorded id or exact comment: nobody else's record, whatever its name.
		errs = append(errs, d.deleteRecords(ctx, r, spec.DNSZone))
	}
	return errors.Join(errs...)
}
