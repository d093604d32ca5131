package scaleway

import (
	"context"
	"maps"

	"github.com/pocbot/pocbot/internal/provision"
)

// found is a resource as the driver sees it.
type found struct {
	id     string
	status string
	attrs  map[string]string
}

// ensure returns the node's resource: the one recorded in state if it still exists, else the one
// carrying the node's exact tags (a crash between create and save, or a POST answered 5xx that
// took effect), else a new one, recorded at once. get returns (nil, nil) when the id is gone.
func ensure(ctx context.Context, r *provision.Run, node, kind string,
	get func(ctx context.Context, id string) (*found, error),
	list func(ctx context.Context) ([]*found, error),
	create func(ctx context.Context) (*found, error),
) (*found, error) {
	zone := r.Spec().Zone
	if rec, ok := r.Resource(node); ok && rec.ID != "" {
		f, err := get(ctx, rec.ID)
		if err != nil {
			return nil, err
		}
		if f != nil {
			return f, record(ctx, r, node, kind, zone, f)
		}
	}
	fs, err := list(ctx)
	if err != nil {
		return nil, err
	}
	if len(fs) > 0 {
		if len(fs) > 1 {
			r.Logger().Warn("several resources carry one node's tags; adopting the first, the sweep removes the rest at down",
				"node", node, "count", len(fs))
		}
		return fs[0], record(ctx, r, node, kind, zone, fs[0])
	}
	f, err := create(ctx)
	if err != nil {
		return nil, err
	}
	return f, record(ctx, r, node, kind, zone, f)
}

// record saves f for node unless the state already says exactly that (up twice = no write).
func record(ctx context.Context, r *provision.Run, node, kind, zone string, f *found) error {
	rec := provision.Record{Kind: kind, ID: f.id, Zone: zone, Status: f.status, Attrs: f.attrs}
	if old, ok := r.Resource(node); ok && old.ID == rec.ID && old.Status == rec.Status && old.Kind == rec.Kind &&
		maps.Equal(old.Attrs, rec.Attrs) {
		return nil
	}
	return r.Record(ctx, node, rec)
}

// need returns the id recorded for a node this one needs.
func need(r *provision.Run, node string) (provision.Record, error) {
	rec, ok := r.Resource(node)
	if !ok || rec.ID == "" {
		return provision.Record{}, errNoRecord(node)
	}
	return rec, nil
}

type errNoRecord string

func (e errNoRecord) Error() string {
	return "no record of " + string(e) + " in state (the engine runs a node after what it needs)"
}
