package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/wiring"
)

// snapshotImageTag is the prefix of the tag the scaleway driver puts on a shared snapshot to name
// the image object it was imported from ("pocbot-image=" and a digest of bucket/key:
// scaleway.ImageTag, which the inventory matches against the keys it knows).
const snapshotImageTag = "pocbot-image="

// imagePrefix is where the image chain stores its objects (images.ObjectKey).
const imagePrefix = "talos/"

// imagesZoneFlag is the --zone flag of the images commands.
func imagesZoneFlag(e *envFlags, zones *[]string) {
	e.SettingWith(zones, "zone", nil, "zone whose shared snapshots are listed, besides the zones of the clusters in state")
}

// imagesEnv is what the images commands read: the state, Scaleway's API, the image bucket.
var imagesEnv = envList(envStore, envSCW, []string{"POC_IMAGE_BUCKET"})

func imagesLsCommand() *command {
	var zones []string
	return &command{
		name:     "ls",
		summary:  "list the image objects and snapshots, and which clusters use each (needs the state key)",
		env:      imagesEnv,
		setFlags: func(fs *flag.FlagSet, e *envFlags) { imagesZoneFlag(e, &zones) },
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			inv, err := a.imageInventory(ctx, zones)
			if err != nil {
				return err
			}
			defer inv.close()
			a.printImages(inv, nil)
			return nil
		},
	}
}

func imagesPruneCommand() *command {
	var (
		zones  []string
		dryRun bool
		minAge time.Duration
	)
	return &command{
		name: "prune",
		summary: "remove the image objects (and their shared snapshots) that no cluster's state references; " +
			"never one in use, never one younger than --min-age",
		env: imagesEnv,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			imagesZoneFlag(e, &zones)
			e.Bool(&dryRun, "dry-run", "", false, "say what would be removed; remove nothing")
			e.Duration(&minAge, "min-age", "", time.Hour,
				"keep images stored more recently than this: an up that just streamed one has not yet written its state's snapshot")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			inv, err := a.imageInventory(ctx, zones)
			if err != nil {
				return err
			}
			defer inv.close()
			if len(inv.unreadable) > 0 {
				return fmt.Errorf("cannot tell which images are in use: the state of %s does not decrypt or decode; "+
					"fix it (or down the cluster) before pruning: %w", strings.Join(inv.unreadable, ", "), inv.unreadableErr)
			}
			return a.prune(ctx, inv, dryRun, minAge)
		},
	}
}

// imageEntry is one image key: its object (when present), its snapshots, its users.
type imageEntry struct {
	key       string
	object    *images.Object
	snapshots []*block.Snapshot
	usedBy    []string
	action    string // set by prune
}

type imageInventory struct {
	store      *statestore.Store // holds the image locks prune takes
	bucket     *blob.Bucket
	bucketName string
	blk        *block.API // nil when Scaleway cannot be reached (ls only)
	blkErr     error
	// volumesFrom maps a snapshot id to the volumes made from it (a snapshot with volumes is kept).
	volumesFrom   map[string][]string
	entries       map[string]*imageEntry
	unreadable    []string
	unreadableErr error
	closers       []func()
}

func (inv *imageInventory) close() {
	for _, c := range inv.closers {
		c()
	}
}

func (inv *imageInventory) entry(key string) *imageEntry {
	e, ok := inv.entries[key]
	if !ok {
		e = &imageEntry{key: key}
		inv.entries[key] = e
	}
	return e
}

// imageInventory reads the bucket's image objects, every cluster state's image key, and the
// shared snapshots (and the volumes made from them) in the given zones and the clusters' zones.
func (a *app) imageInventory(ctx context.Context, zones []string) (*imageInventory, error) {
	inv := &imageInventory{entries: map[string]*imageEntry{}, volumesFrom: map[string][]string{}}
	ok := false
	defer func() {
		if !ok {
			inv.close()
		}
	}()
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	inv.closers = append(inv.closers, func() { _ = s.Close() })
	inv.store = s
	b, name, err := wiring.OpenImageBucket(ctx, a.getenv, provision.DefaultSpec().Region)
	if err != nil {
		return nil, err
	}
	inv.bucket = b
	inv.closers = append(inv.closers, func() { _ = inv.bucket.Close() })
	inv.bucketName = name

	objs, err := images.List(ctx, inv.bucket, imagePrefix)
	if err != nil {
		return nil, err
	}
	for i := range objs {
		inv.entry(objs[i].Key).object = &objs[i]
	}
	zoneSet := map[string]bool{}
	for _, z := range zones {
		zoneSet[z] = true
	}
	if err := inv.readStates(ctx, zoneSet); err != nil {
		return nil, err
	}
	if len(zoneSet) == 0 {
		zoneSet[provision.DefaultSpec().Zone] = true
	}

	client, err := wiring.ScalewayClient(a.getenv)
	if err != nil {
		inv.blkErr = err
		ok = true
		return inv, nil
	}
	inv.blk = block.NewAPI(client)
	project, _ := client.GetDefaultProjectID()
	for z := range zoneSet {
		if err := inv.readZone(ctx, scw.Zone(z), project); err != nil {
			return nil, err
		}
	}
	ok = true
	return inv, nil
}

// readStates records which clusters use which image key, and adds their zones to zoneSet. Every
// state is decrypted: the image key is in the encrypted spec, not in the public header.
func (inv *imageInventory) readStates(ctx context.Context, zoneSet map[string]bool) error {
	headers, err := inv.store.List(ctx)
	if err != nil {
		return err
	}
	ops := &clusterops.Ops{Store: inv.store}
	for _, h := range headers {
		_, st, err := ops.Load(ctx, h.Cluster)
		if errors.Is(err, clusterops.ErrNoCluster) {
			continue // removed between the listing and the read
		}
		if err != nil {
			inv.unreadable = append(inv.unreadable, h.Cluster)
			inv.unreadableErr = errors.Join(inv.unreadableErr, err)
			continue
		}
		if st.Spec.ImageKey != "" {
			e := inv.entry(st.Spec.ImageKey)
			e.usedBy = append(e.usedBy, h.Cluster)
		}
		if st.Spec.Zone != "" {
			zoneSet[st.Spec.Zone] = true
		}
	}
	return nil
}

// readZone lists one zone's shared snapshots and its volumes, and files them (addSnapshots).
func (inv *imageInventory) readZone(ctx context.Context, z scw.Zone, project string) error {
	req := &block.ListSnapshotsRequest{Zone: z, Tags: []string{provision.TagShared}}
	vreq := &block.ListVolumesRequest{Zone: z}
	if project != "" {
		req.ProjectID, vreq.ProjectID = &project, &project
	}
	snaps, err := inv.blk.ListSnapshots(req, scw.WithContext(ctx), scw.WithAllPages())
	if err != nil {
		return fmt.Errorf("list the shared snapshots in zone %s: %w", z, err)
	}
	vols, err := inv.blk.ListVolumes(vreq, scw.WithContext(ctx), scw.WithAllPages())
	if err != nil {
		return fmt.Errorf("list the volumes in zone %s (to keep snapshots volumes were made from): %w", z, err)
	}
	inv.addSnapshots(snaps.Snapshots, vols.Volumes)
	return nil
}

// addSnapshots files each shared snapshot under the image key its tag names, and each volume
// under the snapshot it was made from. The tag is a digest of bucket/key (scaleway.ImageTag):
// matched against every key known from the bucket's objects and the states; a snapshot of an
// object gone from both is listed under its own name.
func (inv *imageInventory) addSnapshots(snaps []*block.Snapshot, vols []*block.Volume) {
	for _, v := range vols {
		if v.ParentSnapshotID != nil && *v.ParentSnapshotID != "" {
			inv.volumesFrom[*v.ParentSnapshotID] = append(inv.volumesFrom[*v.ParentSnapshotID], v.ID)
		}
	}
	byTag := map[string]string{}
	for key := range inv.entries {
		byTag[scaleway.ImageTag(inv.bucketName, key)] = key
	}
	for _, sn := range snaps {
		if !provision.HasTag(sn.Tags, provision.TagShared) {
			continue
		}
		for _, t := range sn.Tags {
			if !strings.HasPrefix(t, snapshotImageTag) {
				continue
			}
			key, known := byTag[t]
			if !known {
				key = "snapshot " + sn.Name + " (its object is gone)"
			}
			e := inv.entry(key)
			e.snapshots = append(e.snapshots, sn)
		}
	}
}

func (inv *imageInventory) sorted() []*imageEntry {
	out := make([]*imageEntry, 0, len(inv.entries))
	for _, e := range inv.entries {
		sort.Strings(e.usedBy)
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func (a *app) printImages(inv *imageInventory, entries []*imageEntry) {
	if entries == nil {
		entries = inv.sorted()
	}
	a.printf("image bucket %s\n", inv.bucketName)
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	header := "KEY\tVERSION\tSIZE\tSTORED\tSNAPSHOTS\tUSED BY"
	withAction := len(entries) > 0 && entries[0].action != ""
	if withAction {
		header += "\tACTION"
	}
	fmt.Fprintln(tw, header)
	for _, e := range entries {
		version, size, stored := "-", "-", "(no object)"
		if o := e.object; o != nil {
			version, size, stored = o.Version, fmt.Sprintf("%d MiB", o.Size>>20), fmtTime(o.Stored)
		}
		var snaps []string
		for _, s := range e.snapshots {
			snaps = append(snaps, fmt.Sprintf("%s/%s (%s)", s.Zone, s.ID, s.Status))
		}
		if inv.blk == nil {
			snaps = []string{"unknown"}
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", e.key, version, size, stored, orDash(strings.Join(snaps, ", ")), orDash(strings.Join(e.usedBy, ", ")))
		if withAction {
			line += "\t" + e.action
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	if inv.blk == nil {
		a.printf("snapshots not listed: %v\n", inv.blkErr)
	}
	if len(inv.unreadable) > 0 {
		a.printf("states that do not decrypt (their image is unknown): %s\n", strings.Join(inv.unreadable, ", "))
	}
}

// prune removes what no state references. The order per image is snapshot first, then object:
// a crash in between leaves an object (listed, pruned next time), never a snapshot whose object
// is gone without trace of why.
func (a *app) prune(ctx context.Context, inv *imageInventory, dryRun bool, minAge time.Duration) error {
	if inv.blk == nil {
		return fmt.Errorf("prune needs the Scaleway API to remove the shared snapshots too: %w", inv.blkErr)
	}
	now := time.Now()
	entries := inv.sorted()
	removed, left := 0, 0
	var errs []error
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, e := range entries {
		switch {
		case len(e.usedBy) > 0:
			e.action = "kept: in use"
			continue
		case e.object != nil && now.Sub(e.object.Stored) < minAge:
			e.action = fmt.Sprintf("kept: stored %s ago (< --min-age %s)", commands.RoundDuration(now.Sub(e.object.Stored)), minAge)
			continue
		}
		var done, kept []string
		// Not while a run makes this image: it holds the image's lock (clusterops.LockImage,
		// the key the making takes), and the removal runs under it, stopping if it is lost.
		ictx, release := ctx, func() {}
		if !dryRun {
			held, rel, err := (&clusterops.Ops{Store: inv.store, LockWait: time.Nanosecond}).LockImage(ctx, inv.bucketName+"/"+e.key)
			var busy *statestore.LockedError
			if errors.As(err, &busy) {
				e.action = fmt.Sprintf("kept: being made by %s (%s, run %s); prune again later",
					cmpOr(busy.Holder.Actor, "a run"), busy.Holder.Command, cmpOr(busy.Holder.RunID, "unknown"))
				left++
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("take the lock of image %s: %w", e.key, err))
				e.action = "kept: " + err.Error()
				left++
				continue
			}
			ictx, release = held, rel
		}
		for _, s := range e.snapshots {
			if vols := inv.volumesFrom[s.ID]; len(vols) > 0 {
				kept = append(kept, fmt.Sprintf("snapshot %s left: volumes %s were made from it", s.ID, strings.Join(vols, ", ")))
				continue
			}
			if !dryRun {
				err := inv.blk.DeleteSnapshot(&block.DeleteSnapshotRequest{Zone: s.Zone, SnapshotID: s.ID}, scw.WithContext(ictx))
				if err != nil {
					kept = append(kept, fmt.Sprintf("snapshot %s left: %v", s.ID, err))
					errs = append(errs, fmt.Errorf("delete snapshot %s of image %s in %s: %w", s.ID, e.key, s.Zone, err))
					continue
				}
			}
			done = append(done, "snapshot "+s.ID)
		}
		if e.object != nil && len(kept) == 0 {
			if !dryRun {
				if err := images.Delete(ictx, inv.bucket, e.key); err != nil {
					errs = append(errs, err)
					kept = append(kept, "object left: "+err.Error())
				} else {
					done = append(done, "object")
				}
			} else {
				done = append(done, "object")
			}
		} else if e.object != nil {
			kept = append(kept, "object left while a snapshot of it remains")
		}
		release()
		if len(done) > 0 {
			removed++
		}
		if len(kept) > 0 {
			left++
		}
		e.action = strings.Join(append(prefixAll(verb+" ", done), kept...), "; ")
	}
	a.printImages(inv, entries)
	a.printf("%s %d image(s); %d left with parts kept\n", verb, removed, left)
	if dryRun {
		a.printf("dry run: nothing was removed\n")
	}
	return errors.Join(errs...)
}

func prefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}
