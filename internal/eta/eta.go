// Package eta says how long an up will take: from the durations of this project's past ups of
// the same path (kept in the state bucket, one shared document), else from the latency profile
// (the critical path of the cluster's graph on the profile's figures). The path is what changes
// an up's length by minutes: a parked worker adopted or a new one ordered, the shared image
// already there or made first. The profile's Elastic Metal delivery is itself learned per offer
// from this project's ups: no source settles it (register row em-delivery: a 2025 order took
// 287 s, recent in-stock ones 0–15 s, and no EM-A116X-SSD order was ever recorded).
package eta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/statestore"
)

// DocName is the shared document of the state bucket that keeps the past durations.
const DocName = "up-durations"

// Keep is how many past durations a path keeps; MinSamples how many it needs before they are
// trusted over the profile.
const (
	Keep       = 10
	MinSamples = 3
)

// deliveryKey keys an offer's delivery durations in the History.
func deliveryKey(offer string) string { return "delivery " + offer }

// Path is the way an up goes.
type Path struct {
	Parked      bool `json:"parked"`       // a parked worker is adopted
	SharedImage bool `json:"shared_image"` // the image's snapshot exists already
}

// String names the path for people and keys the history.
func (p Path) String() string {
	w, i := "cold", "first image"
	if p.Parked {
		w = "parked worker"
	}
	if p.SharedImage {
		i = "shared image"
	}
	return w + ", " + i
}

// Estimate is an ETA and where it comes from.
type Estimate struct {
	Path Path
	D    time.Duration
	From string // "this project's last 5 ups of this path", "the latency profile"
}

// History is the past durations per path (Path.String), oldest first.
type History map[string][]time.Duration

// Add appends d to p's durations, keeping the last Keep.
func (h History) Add(p Path, d time.Duration) {
	k := p.String()
	h[k] = append(h[k], d)
	if n := len(h[k]); n > Keep {
		h[k] = slices.Clone(h[k][n-Keep:])
	}
}

// Of estimates p: the median of its past durations when there are MinSamples, else profile.
func (h History) Of(p Path, profile time.Duration) Estimate {
	ds := h[p.String()]
	if len(ds) < MinSamples {
		return Estimate{Path: p, D: profile, From: "the latency profile"}
	}
	return Estimate{Path: p, D: median(ds), From: fmt.Sprintf("this project's last %d ups of this path", len(ds))}
}

// AddDelivery appends an order of offer that took d to be delivered, keeping the last Keep.
func (h History) AddDelivery(offer string, d time.Duration) {
	k := deliveryKey(offer)
	h[k] = append(h[k], d)
	if n := len(h[k]); n > Keep {
		h[k] = slices.Clone(h[k][n-Keep:])
	}
}

// Delivery is the median of offer's recorded deliveries and how many there are (0: none).
func (h History) Delivery(offer string) (time.Duration, int) {
	ds := h[deliveryKey(offer)]
	if len(ds) == 0 {
		return 0, 0
	}
	return median(ds), len(ds)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Store is what the book needs of the state store.
type Store = statestore.SharedDocs

// Book estimates ups and records how long they took.
type Book struct {
	Store Store
	// Build adds a spec's nodes to a graph (the Ops' builder): the profile's critical path runs
	// on it.
	Build func(g *provision.Graph, spec provision.Spec) error
	// Profile is the latency profile (cluster.Waits, at real time).
	Profile cluster.Waits
	// SharedImage tells whether spec's image snapshot exists already (nil: assume it does not).
	SharedImage func(ctx context.Context, spec provision.Spec) (bool, error)
}

// Profiled is the profile's bound for spec on path p (0 when the graph cannot be built), with
// the worker's delivery taken as delivery when it is not zero (this project's learned figure for
// the offer).
func (b *Book) Profiled(spec provision.Spec, p Path, delivery time.Duration) time.Duration {
	g := provision.NewGraph()
	if b.Build == nil || b.Build(g, spec) != nil {
		return 0
	}
	w := b.Profile
	w.Parked, w.SharedImage = p.Parked, p.SharedImage
	if delivery > 0 {
		w.Scaleway.BMDelivery = delivery
	}
	return g.CriticalPath(w.Of)
}

// Estimate is the ETA of an up of spec (parked: a parked worker will be adopted). A history that
// cannot be read leaves the profile's figure.
func (b *Book) Estimate(ctx context.Context, spec provision.Spec, parked bool) Estimate {
	p := Path{Parked: parked}
	if b.SharedImage != nil {
		if ok, err := b.SharedImage(ctx, spec); err == nil {
			p.SharedImage = ok
		}
	}
	h, _ := b.read(ctx)
	delivery, n := h.Delivery(spec.BaremetalOffer)
	e := h.Of(p, b.Profiled(spec, p, delivery))
	if n > 0 && !p.Parked && e.From == "the latency profile" {
		e.From = fmt.Sprintf("the latency profile, with this project's %s delivery (%d order(s))", spec.BaremetalOffer, n)
	}
	return e
}

// LearnedDelivery is this project's median delivery of offer and how many orders it comes from
// (0: none recorded yet): what `bot doctor --live` reports for register row em-delivery.
func (b *Book) LearnedDelivery(ctx context.Context, offer string) (time.Duration, int, error) {
	h, err := b.read(ctx)
	if err != nil {
		return 0, 0, err
	}
	d, n := h.Delivery(offer)
	return d, n, nil
}

func (b *Book) read(ctx context.Context) (History, error) {
	sh, err := b.Store.GetShared(ctx, DocName)
	if errors.Is(err, statestore.ErrNotFound) {
		return History{}, nil
	}
	if err != nil {
		return History{}, fmt.Errorf("read the past up durations: %w", err)
	}
	h := History{}
	if err := json.Unmarshal(sh.Body, &h); err != nil {
		return History{}, fmt.Errorf("the past up durations do not decode: %w", err)
	}
	return h, nil
}

// Record adds an up that took d on path p and, when delivery is not zero, its worker's order of
// offer that took delivery to be delivered (a conditional write, again on a conflict).
func (b *Book) Record(ctx context.Context, p Path, d time.Duration, offer string, delivery time.Duration) error {
	err := statestore.UpdateShared(ctx, b.Store, DocName, func(body []byte) ([]byte, error) {
		h := History{}
		if body != nil {
			if err := json.Unmarshal(body, &h); err != nil {
				return nil, fmt.Errorf("the past up durations do not decode: %w", err)
			}
		}
		h.Add(p, d)
		if delivery > 0 && offer != "" {
			h.AddDelivery(offer, delivery)
		}
		return json.Marshal(h)
	})
	if err != nil {
		return fmt.Errorf("record an up's duration: %w", err)
	}
	return nil
}
