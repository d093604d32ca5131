// Package pool keeps the parked Elastic Metal workers of one state bucket: workers a `down`
// reset through the Talos API instead of deleting, kept for park_for so that the next `up` of
// the same zone, offer, Talos version and schematic adopts one and skips delivery, rescue and
// the image write. The pool is one encrypted shared document of the state bucket (so only the
// clusters of that bucket, one Scaleway project, share it); every change is a conditional
// write, so two `up`s racing for one worker never both get it.
//
// A parked worker is not left in maintenance mode: it runs a minimal control-plane-type
// configuration of its own (never bootstrapped) whose Talos CA is held in its pool entry, so that
// adopting it is an authenticated apply (docs/architecture.md, "Parked workers").
//
// Trust boundaries (issue 36): a worker is offered only to the repository whose cluster parked
// it, unless that repository and the claiming one both opt in to sharing (share_parked_workers);
// and only when its entry proves that the whole disk was written again from the pinned image and
// read back (Reimage) after the cluster that used it was gone: whatever that cluster's workloads
// left on the disk is not what the next cluster boots.
package pool

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DocName is the pool's shared document in the state bucket.
const DocName = "parked-workers"

// Tag marks a parked server on Scaleway instead of the cluster tag.
const Tag = "pocbot-parked"

// Worker is one parked Elastic Metal server.
type Worker struct {
	ServerID     string    `json:"server_id"`
	IP           string    `json:"ip"`
	Zone         string    `json:"zone"`
	Offer        string    `json:"offer"`
	TalosVersion string    `json:"talos_version"`
	Schematic    string    `json:"schematic"`
	Disk         string    `json:"disk"`
	RescueHost   string    `json:"rescue_host_key"` // SHA256 fingerprint seen when the image was written
	Talosconfig  []byte    `json:"talosconfig"`     // admin access under the park CA (secret: the document is encrypted)
	ParkedFrom   string    `json:"parked_from"`     // cluster that parked it
	ParkedAt     time.Time `json:"parked_at"`
	ParkedUntil  time.Time `json:"parked_until"`
	// Repository is the repository whose cluster parked it ("" for a cluster of no repository,
	// e.g. a CLI `bot up`); Shared, that this repository offers its parked workers to the other
	// repositories of the bucket that share theirs.
	Repository string `json:"repository,omitempty"`
	Shared     bool   `json:"shared,omitempty"`
	// Reimage is the proof that the park wrote the whole disk again from the pinned image and
	// read it back; an entry without it is never offered.
	Reimage *Reimage `json:"reimage,omitempty"`
	// ClaimedBy is set by the `up` that took it: the entry stays until that up recorded the
	// server in its own state, so a crash between the two leaves a trace, never an orphan.
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
}

// Reimage records the park's write of the pinned image over the worker's disk from its rescue
// system (internal/provision/rescue: the stream hashed as dd wrote it, then the same bytes read
// back from the disk, bypassing the page cache, and hashed again: SHA256 is both).
type Reimage struct {
	ImageURL string    `json:"image_url"`
	SHA256   string    `json:"sha256"`
	Bytes    int64     `json:"bytes"`
	Disk     string    `json:"disk"`
	At       time.Time `json:"at"`
}

// Want is what an up needs of a worker, and who asks.
type Want struct {
	Zone, Offer, TalosVersion, Schematic string
	// ImageURL is the pinned metal image the adopting cluster would write: a worker is offered
	// only when its re-image wrote this one.
	ImageURL string
	// Scope is the asking cluster's repository and its sharing choice.
	Scope Scope
}

// Scope is who may be offered a parked worker: a repository, and whether it shares its parked
// workers with (and takes them from) the other sharing repositories of the bucket.
type Scope struct {
	Repository string
	Share      bool
}

// Offered tells whether a worker parked by a cluster of w's repository may go to a cluster of
// scope: the same repository (GitHub names are case-insensitive), or both sharing.
func (w Worker) Offered(scope Scope) bool {
	return strings.EqualFold(w.Repository, scope.Repository) || (w.Shared && scope.Share)
}

// Proven says why w's entry does not prove a verified re-image with imageURL (nil: it does).
func (w Worker) Proven(imageURL string) error {
	r := w.Reimage
	switch {
	case r == nil:
		return errors.New("its entry records no re-image of its disk (parked by an older bot, or the write was not verified)")
	case len(r.SHA256) != 64 || r.Bytes <= 0 || r.Disk == "" || r.At.IsZero():
		return fmt.Errorf("its entry's re-image record is incomplete (sha256 %q, %d bytes, disk %q)", r.SHA256, r.Bytes, r.Disk)
	case r.ImageURL != imageURL:
		return fmt.Errorf("its disk was written from %s, not from the pinned %s", r.ImageURL, imageURL)
	case r.Disk != w.Disk:
		return fmt.Errorf("the re-image wrote %s, the entry's disk is %s", r.Disk, w.Disk)
	case r.At.Before(w.ParkedAt.Add(-time.Hour)):
		// Written by this park, not by an earlier life of the server (a park takes minutes).
		return fmt.Errorf("its disk was re-imaged at %s, long before it was parked at %s", r.At.Format(time.RFC3339), w.ParkedAt.Format(time.RFC3339))
	}
	return nil
}

// Matches tells whether w can serve want: unclaimed, not expired at now, of the same zone, offer,
// Talos version and schematic, offered to want's scope, and proven re-imaged with want's image.
func (w Worker) Matches(want Want, now time.Time) bool {
	return w.ClaimedBy == "" && w.servable(want, now)
}

// servable is Matches without the claim.
func (w Worker) servable(want Want, now time.Time) bool {
	return now.Before(w.ParkedUntil) &&
		w.Zone == want.Zone && w.Offer == want.Offer && w.TalosVersion == want.TalosVersion && w.Schematic == want.Schematic &&
		w.Offered(want.Scope) && w.Proven(want.ImageURL) == nil
}

// Doc is the pool document's body.
type Doc struct {
	Workers []Worker `json:"workers"`
}

// Expired are the entries whose park ended at now (claimed ones included: a claim older than
// the park means the claimer died; deleting is the safe side).
func (d Doc) Expired(now time.Time) []Worker {
	var out []Worker
	for _, w := range d.Workers {
		if !now.Before(w.ParkedUntil) {
			out = append(out, w)
		}
	}
	return out
}

// Find returns the entry of a server.
func (d Doc) Find(serverID string) (Worker, bool) {
	i := slices.IndexFunc(d.Workers, func(w Worker) bool { return w.ServerID == serverID })
	if i < 0 {
		return Worker{}, false
	}
	return d.Workers[i], true
}

// ErrNone: no parked worker matches.
var ErrNone = errors.New("no parked worker matches")

// Claim marks the first entry matching want as claimed by cluster at now and returns it. An
// entry this cluster claimed already comes first: the up that claimed it stopped before recording
// the server (the cluster's lock admits one run at a time, so it is not running), and its rerun
// takes the claim back instead of ordering another worker while the claimed one stays parked,
// billed, until the reaper finds the claim stale.
func (d *Doc) Claim(cluster string, want Want, now time.Time) (Worker, error) {
	i := slices.IndexFunc(d.Workers, func(w Worker) bool { return w.ClaimedBy == cluster && w.servable(want, now) })
	if i < 0 {
		i = slices.IndexFunc(d.Workers, func(w Worker) bool { return w.Matches(want, now) })
	}
	if i < 0 {
		return Worker{}, ErrNone
	}
	d.Workers[i].ClaimedBy, d.Workers[i].ClaimedAt = cluster, now
	return d.Workers[i], nil
}

// StaleClaims are the entries claimed longer than grace before now: the up that claimed one
// retags the server within minutes or gives the entry up, so its run is over (its rerun, if any,
// came and went).
func (d Doc) StaleClaims(now time.Time, grace time.Duration) []Worker {
	var out []Worker
	for _, w := range d.Workers {
		if w.ClaimedBy != "" && now.Sub(w.ClaimedAt) >= grace && now.Before(w.ParkedUntil) {
			out = append(out, w)
		}
	}
	return out
}

// Park records w, replacing an older entry of the same server.
func (d *Doc) Park(w Worker) error {
	if w.ServerID == "" || w.ParkedUntil.IsZero() {
		return errors.New("park a worker: its server id and parked-until are required")
	}
	d.Remove(w.ServerID)
	d.Workers = append(d.Workers, w)
	return nil
}

// Remove forgets a server.
func (d *Doc) Remove(serverID string) {
	d.Workers = slices.DeleteFunc(d.Workers, func(o Worker) bool { return o.ServerID == serverID })
}
