package scaleway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/pocbot/pocbot/internal/provision"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// ---- the shared snapshot ----

// ImageTag names the image object a shared snapshot was imported from: a snapshot is reused by
// every cluster with the same object key, and only ever matched by this exact tag. The bucket
// and key are hashed (SHA-256, 128 bits in hex): "bucket/key" is ≈ 116 characters for a typical
// bucket name, longer than a tag may be (provision.MaxTagLen); the snapshot's name and the
// import request still say which object it came from.
func ImageTag(bucket, key string) string {
	sum := sha256.Sum256([]byte(bucket + "/" + key))
	return imageTagPrefix + hex.EncodeToString(sum[:16])
}

func (d *Driver) snapshotNode() provision.Node {
	return provision.Node{
		Name: NodeSnapshot, Kind: KindSnapshot,
		Preflight: func(ctx context.Context, r *provision.Run) error {
			if d.bucket == nil {
				return nil
			}
			b := r.Spec().ImageBucket
			if err := d.bucket.BucketReachable(ctx, b); err != nil {
				return fmt.Errorf("image bucket %q cannot be reached: check POC_IMAGE_BUCKET and the Object Storage credentials: %w", b, err)
			}
			return nil
		},
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone, spec := zoneOf(r), r.Spec()
			tag := ImageTag(spec.ImageBucket, spec.ImageKey)
			what := fmt.Sprintf("snapshot of image %s/%s", spec.ImageBucket, spec.ImageKey)
			get, list := d.sharedSnapshotFinders(zone, tag, what)
			f, err := ensure(ctx, r, NodeSnapshot, KindSnapshot, get, list,
				func(ctx context.Context) (*found, error) {
					s, err := d.blk.ImportSnapshotFromObjectStorage(&block.ImportSnapshotFromObjectStorageRequest{
						Zone: zone, Bucket: spec.ImageBucket, Key: spec.ImageKey, ProjectID: d.project,
						Name: "pocbot-talos-" + spec.TalosVersion + "-" + shortKey(spec.ImageKey),
						Tags: []string{provision.TagBot, provision.TagShared, tag},
					}, ctxOpt(ctx))
					return made(err, "import "+what, zone, func() *found { return snapFound(s) })
				})
			if err != nil {
				return err
			}
			r.Note(NodeSnapshot, "snapshot "+f.id+" is "+f.status)
			var last *block.Snapshot
			err = r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
				s, err := d.blk.GetSnapshot(&block.GetSnapshotRequest{Zone: zone, SnapshotID: f.id}, ctxOpt(ctx))
				if err != nil {
					return false, classify("get "+what, string(zone), err)
				}
				last = s
				if s.Status == block.SnapshotStatusError {
					return false, fmt.Errorf("%s: import failed (status error): check that the object is a QCOW2 image in region %s", what, spec.Region)
				}
				return s.Status == block.SnapshotStatusAvailable, nil
			})
			if err != nil {
				return err
			}
			return record(ctx, r, NodeSnapshot, KindSnapshot, string(zone), snapFound(last))
		},
		// No Destroy: the snapshot is shared by every cluster of this image (`bot images prune`).
	}
}

// sharedSnapshotFinders are the snapshot node's look-ups of the image's shared snapshot: by the
// id the state records, and by the image's tag.
func (d *Driver) sharedSnapshotFinders(zone scw.Zone, tag, what string) (func(context.Context, string) (*found, error), func(context.Context) ([]*found, error)) {
	get := func(ctx context.Context, id string) (*found, error) {
		return getFound(ctx, d.blk.GetSnapshot, &block.GetSnapshotRequest{Zone: zone, SnapshotID: id}, zone, what,
			func(s *block.Snapshot) *found {
				if !provision.HasTag(s.Tags, tag) || unusable(string(s.Status)) {
					return nil // another image now: find or import the right one
				}
				return snapFound(s)
			})
	}
	list := func(ctx context.Context) ([]*found, error) {
		return listFound(ctx, d.blk.ListSnapshots, &block.ListSnapshotsRequest{Zone: zone, ProjectID: &d.project,
			Tags: []string{provision.TagShared}}, zone, what, func(res *block.ListSnapshotsResponse) []*block.Snapshot { return res.Snapshots },
			func(s *block.Snapshot) bool {
				return provision.HasTag(s.Tags, provision.TagShared) && provision.HasTag(s.Tags, tag) && !unusable(string(s.Status))
			}, snapFound)
	}
	return get, list
}

// SnapshotAvailable is the snapshot node's work when there is nothing to import nor to wait for:
// when the image's shared snapshot is available (the one the state records, else one tagged for
// the image), it records it for NodeSnapshot and says so; otherwise it records nothing. The
// cluster calls it before taking the image lock, which only keeps two runs from importing the
// same image (every up of a stored image, every resume, then takes no lock).
func (d *Driver) SnapshotAvailable(ctx context.Context, r *provision.Run) (bool, error) {
	zone, spec := zoneOf(r), r.Spec()
	get, list := d.sharedSnapshotFinders(zone, ImageTag(spec.ImageBucket, spec.ImageKey),
		fmt.Sprintf("snapshot of image %s/%s", spec.ImageBucket, spec.ImageKey))
	var f *found
	if rec, ok := r.Resource(NodeSnapshot); ok && rec.ID != "" {
		var err error
		if f, err = get(ctx, rec.ID); err != nil {
			return false, err
		}
	}
	if f == nil || f.status != string(block.SnapshotStatusAvailable) {
		fs, err := list(ctx)
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(fs, func(f *found) bool { return f.status == string(block.SnapshotStatusAvailable) })
		if i < 0 {
			return false, nil
		}
		f = fs[i]
	}
	return true, record(ctx, r, NodeSnapshot, KindSnapshot, string(zone), f)
}

func unusable(status string) bool {
	return status == "error" || status == "deleting" || status == "deleted"
}

func shortKey(key string) string {
	parts := strings.Split(key, "/")
	for _, p := range parts {
		if len(p) >= 12 {
			return p[:12]
		}
	}
	return strings.NewReplacer("/", "-", ".", "-").Replace(key)
}

func snapFound(s *block.Snapshot) *found {
	return &found{id: s.ID, status: string(s.Status), attrs: map[string]string{"size": fmt.Sprint(uint64(s.Size))}}
}

// ---- root volumes ----

func (d *Driver) volumeNode(i int) provision.Node {
	name := NodeVolume(i)
	return provision.Node{
		Name: name, Kind: KindVolume, Needs: []string{NodeSnapshot},
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone, spec := zoneOf(r), r.Spec()
			vname := r.Name(nameSuffix(spec, name))
			what := fmt.Sprintf("root volume %q", vname)
			snap, err := need(r, NodeSnapshot)
			if err != nil {
				return err
			}
			f, err := ensure(ctx, r, name, KindVolume,
				func(ctx context.Context, id string) (*found, error) { return d.getVolume(ctx, zone, id, what) },
				func(ctx context.Context) ([]*found, error) {
					return listFound(ctx, d.blk.ListVolumes, &block.ListVolumesRequest{Zone: zone, ProjectID: &d.project, Tags: nodeTags(r, name)},
						zone, what, func(res *block.ListVolumesResponse) []*block.Volume { return res.Volumes },
						func(v *block.Volume) bool { return exactNode(v.Tags, r, name) && !unusable(string(v.Status)) }, volFound)
				},
				func(ctx context.Context) (*found, error) {
					size := scw.Size(uint64(spec.CPVolumeSizeGB) * uint64(scw.GB))
					v, err := d.blk.CreateVolume(&block.CreateVolumeRequest{
						Zone: zone, Name: vname, ProjectID: d.project, Tags: r.Tags(name),
						PerfIops:     scw.Uint32Ptr(uint32(spec.CPVolumeIOPS)),
						FromSnapshot: &block.CreateVolumeRequestFromSnapshot{SnapshotID: snap.ID, Size: &size},
					}, ctxOpt(ctx))
					return made(err, "create "+what, zone, func() *found { return volFound(v) })
				})
			if err != nil {
				return err
			}
			if f.status == string(block.VolumeStatusAvailable) || f.status == string(block.VolumeStatusInUse) {
				return nil
			}
			get := func(ctx context.Context) (*found, error) { return d.getVolume(ctx, zone, f.id, what) }
			return awaitFound(ctx, r, name, KindVolume, zone, what, "volume "+f.id+" disappeared while being created", get,
				func(v *found) (bool, error) {
					if v.status == string(block.VolumeStatusError) {
						return false, fmt.Errorf("%s: volume %s is in error: run down, then up", what, f.id)
					}
					return v.status == string(block.VolumeStatusAvailable) || v.status == string(block.VolumeStatusInUse), nil
				})
		},
		Destroy: destroyRecorded(name, d.deleteVolume),
	}
}

func (d *Driver) getVolume(ctx context.Context, zone scw.Zone, id, what string) (*found, error) {
	return getFound(ctx, d.blk.GetVolume, &block.GetVolumeRequest{Zone: zone, VolumeID: id}, zone, what, func(v *block.Volume) *found {
		if unusable(string(v.Status)) && v.Status != block.VolumeStatusError {
			return nil
		}
		return volFound(v)
	})
}

func volFound(v *block.Volume) *found {
	return &found{id: v.ID, status: string(v.Status), attrs: map[string]string{"name": v.Name}}
}

// deleteVolume waits for the volume to be detached (after its server's terminate), deletes it
// and waits until it is gone.
func (d *Driver) deleteVolume(ctx context.Context, r *provision.Run, zone scw.Zone, id string) error {
	what := "delete volume " + id
	get := func(ctx context.Context) (*block.Volume, error) {
		return d.blk.GetVolume(&block.GetVolumeRequest{Zone: zone, VolumeID: id}, ctxOpt(ctx))
	}
	return deleteWait(ctx, r, zone, KindVolume, id, what, get, func(v *block.Volume) string { return v.Name }, func(ctx context.Context, v *block.Volume) (bool, error) {
		switch v.Status {
		case block.VolumeStatusDeleted:
			return true, nil
		case block.VolumeStatusAvailable, block.VolumeStatusError:
			if err := d.blk.DeleteVolume(&block.DeleteVolumeRequest{Zone: zone, VolumeID: id}, ctxOpt(ctx)); err != nil && !notFound(err) {
				// a volume still referenced for a moment after its server's terminate answers a
				// precondition error: keep polling until the deadline; say why if it never ends.
				return false, provision.Transient(classify(what, string(zone), err), 0)
			}
		}
		return false, nil
	})
}

// SharedSnapshot tells whether spec's image snapshot exists already, usable (an up then imports
// nothing: the ETA's shared-image path).
func (d *Driver) SharedSnapshot(ctx context.Context, spec provision.Spec) (bool, error) {
	tag := ImageTag(spec.ImageBucket, spec.ImageKey)
	res, err := d.blk.ListSnapshots(&block.ListSnapshotsRequest{Zone: scw.Zone(spec.Zone), ProjectID: &d.project,
		Tags: []string{provision.TagShared}}, ctxOpt(ctx), scw.WithAllPages())
	if err != nil {
		return false, classify("list the shared snapshots", spec.Zone, err)
	}
	for _, s := range res.Snapshots {
		if provision.HasTag(s.Tags, tag) && !unusable(string(s.Status)) {
			return true, nil
		}
	}
	return false, nil
}
