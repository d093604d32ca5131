package scaleway

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// Block Storage is served under both /block/v1 (the recordings) and
// /block/v1alpha1 (what pocbot's SDK clients may use); both answer with
// block/v1 types, a superset of v1alpha1's.

type volume struct {
	ID, Name, Project, Status string
	Zone                      scw.Zone
	Size                      scw.Size
	Iops                      uint32
	Tags                      []string
	ParentSnapshotID          *string
	ServerID                  string
	refID                     string
	Created, Updated          time.Time
	attachedAt                time.Time
	lastDetached              *time.Time
	gen                       int
}

type snapshot struct {
	ID, Name, Project, Status string
	Zone                      scw.Zone
	Size                      scw.Size
	Tags                      []string
	Parent                    *block.SnapshotParentVolume
	Created, Updated          time.Time
	gen                       int
}

// qcow2Magic starts every QCOW2 file.
var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

func volType(iops uint32) string {
	if iops >= 15000 {
		return "sbs_15k"
	}
	return "sbs_5k"
}

// newVolume registers a volume in state "creating". Caller holds e.mu.
func (e *Emulator) newVolume(z scw.Zone, name, project string, size scw.Size, iops uint32, tags []string, parent *string) *volume {
	now := e.clock().UTC()
	v := &volume{ID: e.newID(), Name: name, Project: project, Status: "creating", Zone: z, Size: size, Iops: iops,
		Tags: cp(tags), ParentSnapshotID: parent, Created: now, Updated: now}
	e.vols[v.ID] = v
	return v
}

func (e *Emulator) attachVolume(v *volume, s *server) {
	v.ServerID = s.ID
	v.Status = "in_use"
	v.refID = e.newID()
	v.attachedAt = e.clock().UTC()
	v.gen++
	s.VolumeIDs = append(s.VolumeIDs, v.ID)
}

// detachVolumeLater frees v some seconds after its server is gone: the
// volume stays in_use, still referencing the server, until then (recorded
// by scaleway-cli, e.g. test-create-server-simple-default: in_use right
// after the server's DELETE, available 5-6 s later). Caller holds e.mu.
func (e *Emulator) detachVolumeLater(v *volume) {
	v.gen++
	gen := v.gen
	e.after(e.lat.VolumeDetach, func() {
		if v.gen == gen && e.vols[v.ID] == v {
			e.detachVolume(v)
		}
	})
}

func (e *Emulator) detachVolume(v *volume) {
	v.ServerID = ""
	v.Status = "available"
	t := e.clock().UTC()
	v.lastDetached = &t
	v.gen++
}

func (e *Emulator) volumeJSON(v *volume) *block.Volume {
	refs := []*block.Reference{}
	if v.ServerID != "" {
		at := v.attachedAt
		refs = append(refs, &block.Reference{ID: v.refID, ProductResourceType: "instance_server", ProductResourceID: v.ServerID,
			CreatedAt: &at, Type: "exclusive", Status: "attached"})
	}
	iops := v.Iops
	c, u := v.Created, v.Updated
	return &block.Volume{
		ID: v.ID, Name: v.Name, Type: volType(v.Iops), Size: v.Size, ProjectID: v.Project, CreatedAt: &c, UpdatedAt: &u,
		References: refs, ParentSnapshotID: v.ParentSnapshotID, Status: block.VolumeStatus(v.Status), Tags: cp(v.Tags),
		Zone: v.Zone, Specs: &block.VolumeSpecifications{PerfIops: &iops, Class: "sbs"}, LastDetachedAt: v.lastDetached,
	}
}

func (e *Emulator) snapshotJSON(s *snapshot) *block.Snapshot {
	c, u := s.Created, s.Updated
	return &block.Snapshot{
		ID: s.ID, Name: s.Name, ParentVolume: s.Parent, Size: s.Size, ProjectID: s.Project, CreatedAt: &c, UpdatedAt: &u,
		References: []*block.Reference{}, Status: block.SnapshotStatus(s.Status), Tags: cp(s.Tags), Zone: s.Zone, Class: "sbs",
	}
}

// blockVolume drops the keys the recordings never show.
func blockVolume(v *block.Volume) map[string]any { return reshape(v, []string{"srn"}, nil) }
func blockSnap(s *block.Snapshot) map[string]any {
	return reshape(s, []string{"srn", "kms_key_id"}, nil)
}

// volumeAnswer and snapshotAnswer are the Block API's bodies of v and s.
func (e *Emulator) volumeAnswer(v *volume) any     { return blockVolume(e.volumeJSON(v)) }
func (e *Emulator) snapshotAnswer(s *snapshot) any { return blockSnap(e.snapshotJSON(s)) }

// volumeTypes are Scaleway's public list prices for Block Storage
// (estimates: no recording prices them): 5K 0.086 €/GB/month, 15K 0.11,
// snapshots 0.033, expressed per GB-hour as the API does.
func (e *Emulator) volumeTypes(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	money := func(perMonth float64) *scw.Money {
		h := perMonth / 730
		return &scw.Money{CurrencyCode: "EUR", Units: int64(h), Nanos: int32((h - float64(int64(h))) * 1e9)}
	}
	i5, i15 := uint32(5000), uint32(15000)
	types := []*block.VolumeType{
		{Type: "sbs_5k", Pricing: money(0.086), SnapshotPricing: money(0.033), Specs: &block.VolumeSpecifications{PerfIops: &i5, Class: "sbs"}, Zone: z},
		{Type: "sbs_15k", Pricing: money(0.11), SnapshotPricing: money(0.033), Specs: &block.VolumeSpecifications{PerfIops: &i15, Class: "sbs"}, Zone: z},
	}
	pg, ok := pageOf(w, r, types)
	if !ok {
		return
	}
	out := []any{}
	for _, t := range pg {
		out = append(out, reshape(t, []string{"srn"}, nil))
	}
	writeJSON(w, http.StatusOK, map[string]any{"volume_types": out, "total_count": len(types)})
}

func (e *Emulator) createVolume(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	var req block.CreateVolumeRequest
	if !decode(w, r, &req) {
		return
	}
	if (req.FromEmpty == nil) == (req.FromSnapshot == nil) {
		invalidArg(w, "from_empty", "exactly one of from_empty and from_snapshot must be set")
		return
	}
	iops := uint32(5000)
	if req.PerfIops != nil {
		iops = *req.PerfIops
	}
	if iops != 5000 && iops != 15000 {
		invalidArg(w, "perf_iops", "perf_iops must be 5000 or 15000")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !quotas(e, w, e.vols, "volumes", QuotaVolumes, nil) {
		return
	}
	var size scw.Size
	var parent *string
	if req.FromEmpty != nil {
		size = req.FromEmpty.Size
		if size < 1_000_000_000 {
			invalidArg(w, "from_empty.size", "size must be at least 1 GB")
			return
		}
	} else {
		sn, ok := e.snaps[req.FromSnapshot.SnapshotID]
		if !ok || sn.Zone != z {
			blockNotFound(w, "snapshot", req.FromSnapshot.SnapshotID)
			return
		}
		if sn.Status != "available" {
			transient(w, "snapshot", sn.ID, sn.Status)
			return
		}
		size = sn.Size
		if req.FromSnapshot.Size != nil {
			if *req.FromSnapshot.Size < sn.Size {
				invalidArg(w, "from_snapshot.size", fmt.Sprintf("size %d is smaller than the snapshot's %d", *req.FromSnapshot.Size, sn.Size))
				return
			}
			size = *req.FromSnapshot.Size
		}
		id := sn.ID
		parent = &id
	}
	v := e.newVolume(z, req.Name, req.ProjectID, size, iops, req.Tags, parent)
	gen := v.gen
	lat := e.lat.VolumeCreate
	if parent == nil {
		lat = e.lat.VolumeEmpty
	}
	e.after(lat, func() {
		if v.gen == gen && e.vols[v.ID] == v && v.Status == "creating" {
			v.Status = "available"
			v.Updated = e.clock().UTC()
		}
	})
	writeJSON(w, http.StatusOK, blockVolume(e.volumeJSON(v)))
}

func (e *Emulator) listVolumes(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	serveList(e, w, r, e.vols, z, listing[*volume]{key: "volumes", projectParam: "project_id", paging: pagingBody,
		match: func(v *volume, q url.Values) bool {
			return q.Get("product_resource_id") == "" || q.Get("product_resource_id") == v.ServerID
		},
		json: e.volumeAnswer})
}

func (e *Emulator) oneVolume(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	serveOne(e, w, r, id, single[*volume]{find: inZone(e.vols, z), notFound: named(blockNotFound, "volume"),
		json: e.volumeAnswer, patch: e.patchVolume, del: e.deleteVolume, badMethod: methodNotAllowed})
}

// patchVolume renames or retags v, or grows it or changes its IOPS (updating for VolumeUpdate).
// Caller holds e.mu.
func (e *Emulator) patchVolume(w http.ResponseWriter, r *http.Request, v *volume) bool {
	var req struct {
		nameTags
		Size     *scw.Size `json:"size"`
		PerfIops *uint32   `json:"perf_iops"`
	}
	if !decode(w, r, &req) {
		return false
	}
	if v.Status == "creating" || v.Status == "updating" || v.Status == "deleting" {
		transient(w, "volume", v.ID, v.Status)
		return false
	}
	if req.PerfIops != nil && *req.PerfIops != 5000 && *req.PerfIops != 15000 {
		invalidArg(w, "perf_iops", "perf_iops must be 5000 or 15000")
		return false
	}
	if req.Size != nil && *req.Size < v.Size {
		invalidArg(w, "size", "a volume cannot shrink")
		return false
	}
	req.apply(&v.Name, &v.Tags)
	if req.PerfIops != nil || req.Size != nil {
		set(&v.Iops, req.PerfIops)
		set(&v.Size, req.Size)
		prev := v.Status
		v.Status = "updating"
		v.gen++
		gen := v.gen
		e.after(e.lat.VolumeUpdate, func() {
			if v.gen == gen && e.vols[v.ID] == v {
				v.Status = prev
			}
		})
	}
	return e.touched(&v.Updated)
}

// deleteVolume deletes v, refused while a server uses it or it is in a transient state.
// Caller holds e.mu.
func (e *Emulator) deleteVolume(w http.ResponseWriter, v *volume) {
	if v.ServerID != "" || v.Status == "in_use" {
		stillInUse(w, fmt.Sprintf("volume %s is attached to instance server %s: terminate or delete the server first", v.ID, v.ServerID))
		return
	}
	if v.Status != "available" && v.Status != "error" {
		transient(w, "volume", v.ID, v.Status)
		return
	}
	delete(e.vols, v.ID)
	v.gen++
	e.deleted("block_volume", v.ID)
	noContent(w)
}

func (e *Emulator) createSnapshot(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	decodeLocked(e, w, r, func(req *block.CreateSnapshotRequest) {
		v, ok := e.vols[req.VolumeID]
		if !ok || v.Zone != z {
			blockNotFound(w, "volume", req.VolumeID)
			return
		}
		if v.Status == "deleting" {
			// A volume still being created can be snapshotted (recorded in
			// block__volume-from-snapshot); one being deleted cannot.
			transient(w, "volume", v.ID, v.Status)
			return
		}
		if !quotas(e, w, e.snaps, "snapshots", QuotaSnapshots, nil) {
			return
		}
		s := e.newSnapshot(z, req.Name, req.ProjectID, v.Size, req.Tags)
		s.Parent = &block.SnapshotParentVolume{ID: v.ID, Name: v.Name, Type: volType(v.Iops), Status: block.VolumeStatus(v.Status)}
		e.after(e.lat.SnapshotOfVolume, func() { e.snapshotReady(s) })
		writeJSON(w, http.StatusOK, blockSnap(e.snapshotJSON(s)))
	})
}

func (e *Emulator) newSnapshot(z scw.Zone, name, project string, size scw.Size, tags []string) *snapshot {
	now := e.clock().UTC()
	s := &snapshot{ID: e.newID(), Name: name, Project: project, Status: "creating", Zone: z, Size: size, Tags: cp(tags),
		Created: now, Updated: now}
	e.snaps[s.ID] = s
	return s
}

func (e *Emulator) snapshotReady(s *snapshot) {
	if e.snaps[s.ID] == s && s.Status == "creating" {
		s.Status = "available"
		s.Updated = e.clock().UTC()
	}
}

// importSnapshot checks the object the way the real service does before
// accepting the import: it must exist in a bucket of the zone's region and
// be a QCOW2 image. The snapshot's size is the image's virtual size.
func (e *Emulator) importSnapshot(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	var req block.ImportSnapshotFromObjectStorageRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Bucket == "" || req.Key == "" {
		invalidArg(w, "key", "bucket and key are required")
		return
	}
	if e.opts.Objects == nil {
		invalidArg(w, "key", fmt.Sprintf("object %s/%s not found in region %s", req.Bucket, req.Key, regionOf(string(z))))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rc, objSize, err := e.opts.Objects.Open(ctx, regionOf(string(z)), req.Bucket, req.Key)
	if err != nil {
		invalidArg(w, "key", fmt.Sprintf("object %s/%s is not readable in region %s: %v", req.Bucket, req.Key, regionOf(string(z)), err))
		return
	}
	head := make([]byte, 32)
	n, _ := io.ReadFull(rc, head)
	_ = rc.Close()
	head = head[:n]
	if n < 4 || string(head[:4]) != string(qcow2Magic) {
		invalidArg(w, "key", fmt.Sprintf("object %s/%s is not a QCOW2 image (no QFI\\xfb magic)", req.Bucket, req.Key))
		return
	}
	size := scw.Size(objSize)
	if n >= 32 {
		// QCOW2 header: virtual size, big-endian, at offset 24.
		if vs := binary.BigEndian.Uint64(head[24:32]); vs > 0 {
			size = scw.Size(vs)
		}
	}
	if req.Size != nil {
		size = *req.Size
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !quotas(e, w, e.snaps, "snapshots", QuotaSnapshots, nil) {
		return
	}
	s := e.newSnapshot(z, req.Name, req.ProjectID, size, req.Tags)
	e.after(e.lat.SnapshotImport, func() { e.snapshotReady(s) })
	writeJSON(w, http.StatusOK, blockSnap(e.snapshotJSON(s)))
}

func (e *Emulator) listSnapshots(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	serveList(e, w, r, e.snaps, z, listing[*snapshot]{key: "snapshots", projectParam: "project_id", paging: pagingBody,
		match: func(s *snapshot, q url.Values) bool {
			return q.Get("volume_id") == "" || (s.Parent != nil && s.Parent.ID == q.Get("volume_id"))
		},
		json: e.snapshotAnswer})
}

func (e *Emulator) oneSnapshot(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	serveOne(e, w, r, id, single[*snapshot]{find: inZone(e.snaps, z), notFound: named(blockNotFound, "snapshot"),
		json: e.snapshotAnswer, patch: e.patchSnapshot, del: e.deleteSnapshot, badMethod: methodNotAllowed})
}

// patchSnapshot renames or retags s. Caller holds e.mu.
func (e *Emulator) patchSnapshot(w http.ResponseWriter, r *http.Request, s *snapshot) bool {
	var req nameTags
	if !decode(w, r, &req) {
		return false
	}
	req.apply(&s.Name, &s.Tags)
	return e.touched(&s.Updated)
}

// deleteSnapshot deletes s, refused while it is still being created. Caller holds e.mu.
func (e *Emulator) deleteSnapshot(w http.ResponseWriter, s *snapshot) {
	if s.Status == "creating" {
		transient(w, "snapshot", s.ID, s.Status)
		return
	}
	delete(e.snaps, s.ID)
	e.deleted("block_snapshot", s.ID)
	noContent(w)
}
