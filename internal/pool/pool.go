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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pocbot/pocbot/internal/statestore"
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

// Store is what the pool needs of the state store.
type Store interface {
	GetShared(ctx context.Context, name string) (*statestore.Shared, error)
	PutShared(ctx context.Context, doc *statestore.Shared) error
}

// Pool reads and changes the pool document.
type Pool struct {
	Store Store
	Now   func() time.Time
}

func (p *Pool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// List reads the pool (empty when it was never written).
func (p *Pool) List(ctx context.Context) (Doc, error) {
	d, _, err := p.read(ctx)
	return d, err
}

func (p *Pool) read(ctx context.Context) (Doc, *statestore.Shared, error) {
	sh, err := p.Store.GetShared(ctx, DocName)
	if errors.Is(err, statestore.ErrNotFound) {
		return Doc{}, &statestore.Shared{Name: DocName}, nil
	}
	if err != nil {
		return Doc{}, nil, fmt.Errorf("read the parked-worker pool: %w", err)
	}
	var d Doc
	if err := json.Unmarshal(sh.Body, &d); err != nil {
		return Doc{}, nil, fmt.Errorf("parked-worker pool document does not decode: %w", err)
	}
	return d, sh, nil
}

// change applies f to the pool and writes it conditionally, again on a conflict (another
// writer's change is read and f decides again on it), up to a few times.
func (p *Pool) change(ctx context.Context, what string, f func(*Doc) error) error {
	var last error
	for range 8 {
		d, sh, err := p.read(ctx)
		if err != nil {
			return err
		}
		if err := f(&d); err != nil {
			return err
		}
		sh.Body, err = json.Marshal(d)
		if err != nil {
			return err
		}
		err = p.Store.PutShared(ctx, sh)
		if err == nil {
			return nil
		}
		if !errors.Is(err, statestore.ErrConflict) {
			return fmt.Errorf("%s: %w", what, err)
		}
		last = err
	}
	return fmt.Errorf("%s: the pool kept changing under this writer: %w", what, last)
}

// ErrNone: no parked worker matches.
var ErrNone = errors.New("no parked worker matches")

// Claim takes a matching parked worker for cluster: the conditional write makes it this
// caller's only; two claims never return the same server.
func (p *Pool) Claim(ctx context.Context, cluster string, want Want) (Worker, error) {
	var got Worker
	err := p.change(ctx, "claim a parked worker for "+cluster, func(d *Doc) error {
		now := p.now()
		for i, w := range d.Workers {
			if w.Matches(want, now) {
				d.Workers[i].ClaimedBy, d.Workers[i].ClaimedAt = cluster, now
				got = d.Workers[i]
				return nil
			}
		}
		return ErrNone
	})
	return got, err
}

// Park records w (replacing an older entry of the same server).
func (p *Pool) Park(ctx context.Context, w Worker) error {
	if w.ServerID == "" || w.ParkedUntil.IsZero() {
		return errors.New("park a worker: its server id and parked-until are required")
	}
	return p.change(ctx, "park worker "+w.ServerID, func(d *Doc) error {
		d.Workers = slices.DeleteFunc(d.Workers, func(o Worker) bool { return o.ServerID == w.ServerID })
		d.Workers = append(d.Workers, w)
		return nil
	})
}

// Remove forgets a server (adopted and recorded by its cluster, or deleted).
func (p *Pool) Remove(ctx context.Context, serverID string) error {
	return p.change(ctx, "remove worker "+serverID+" from the pool", func(d *Doc) error {
		d.Workers = slices.DeleteFunc(d.Workers, func(o Worker) bool { return o.ServerID == serverID })
		return nil
	})
}
