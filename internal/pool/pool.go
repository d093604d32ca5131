// Package pool keeps the parked Elastic Metal workers of one state bucket: workers a `down`
// reset through the Talos API instead of deleting, kept for park_for so that the next `up` of
// the same zone, offer, Talos version and schematic adopts one and skips delivery, rescue and
// the image write. The pool is one encrypted shared document of the state bucket (so only the
// clusters of that bucket, one Scaleway project, share it); every change is a conditional
// write, so two `up`s racing for one worker never both get it.
//
// A parked worker is not left in maintenance mode: it runs a minimal control-plane-type
// configuration of its own (never bootstrapped) whose Talos CA is held in its pool entry, with
// its ingress firewall closed but to the admin CIDRs, so that adopting it is an authenticated
// apply (docs/architecture.md, "Parked workers").
package pool

import (
	"errors"
	"slices"
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
	// ClaimedBy is set by the `up` that took it: the entry stays until that up recorded the
	// server in its own state, so a crash between the two leaves a trace, never an orphan.
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
}

// Want is what an up needs of a worker.
type Want struct {
	Zone, Offer, TalosVersion, Schematic string
}

// Matches tells whether w can serve want, unclaimed and not expired at now.
func (w Worker) Matches(want Want, now time.Time) bool {
	return w.ClaimedBy == "" && now.Before(w.ParkedUntil) &&
		w.Zone == want.Zone && w.Offer == want.Offer && w.TalosVersion == want.TalosVersion && w.Schematic == want.Schematic
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

// Claim marks the first entry matching want as claimed by cluster at now and returns it.
func (d *Doc) Claim(cluster string, want Want, now time.Time) (Worker, error) {
	for i, w := range d.Workers {
		if w.Matches(want, now) {
			d.Workers[i].ClaimedBy, d.Workers[i].ClaimedAt = cluster, now
			return d.Workers[i], nil
		}
	}
	return Worker{}, ErrNone
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
