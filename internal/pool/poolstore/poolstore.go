// Package poolstore keeps the pool document (internal/pool) in the state bucket: one encrypted
// shared document, every change a conditional write retried on a conflict, so that two claims
// never return the same worker.
package poolstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/statestore"
)

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
func (p *Pool) List(ctx context.Context) (pool.Doc, error) {
	d, _, err := p.read(ctx)
	return d, err
}

func (p *Pool) read(ctx context.Context) (pool.Doc, *statestore.Shared, error) {
	sh, err := p.Store.GetShared(ctx, pool.DocName)
	if errors.Is(err, statestore.ErrNotFound) {
		return pool.Doc{}, &statestore.Shared{Name: pool.DocName}, nil
	}
	if err != nil {
		return pool.Doc{}, nil, fmt.Errorf("read the parked-worker pool: %w", err)
	}
	var d pool.Doc
	if err := json.Unmarshal(sh.Body, &d); err != nil {
		return pool.Doc{}, nil, fmt.Errorf("parked-worker pool document does not decode: %w", err)
	}
	return d, sh, nil
}

// change applies f to the pool and writes it conditionally, again on a conflict (another
// writer's change is read and f decides again on it), up to a few times.
func (p *Pool) change(ctx context.Context, what string, f func(*pool.Doc) error) error {
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

// Claim takes a matching parked worker for cluster: the conditional write makes it this
// caller's only; two claims never return the same server.
func (p *Pool) Claim(ctx context.Context, cluster string, want pool.Want) (pool.Worker, error) {
	var got pool.Worker
	err := p.change(ctx, "claim a parked worker for "+cluster, func(d *pool.Doc) (err error) {
		got, err = d.Claim(cluster, want, p.now())
		return err
	})
	return got, err
}

// Available tells whether an unclaimed, unexpired worker matches want (a read: a later Claim may
// still lose it to another up).
func (p *Pool) Available(ctx context.Context, want pool.Want) (bool, error) {
	d, _, err := p.read(ctx)
	if err != nil {
		return false, err
	}
	now := p.now()
	for _, w := range d.Workers {
		if w.Matches(want, now) {
			return true, nil
		}
	}
	return false, nil
}

// Park records w (replacing an older entry of the same server).
func (p *Pool) Park(ctx context.Context, w pool.Worker) error {
	return p.change(ctx, "park worker "+w.ServerID, func(d *pool.Doc) error { return d.Park(w) })
}

// Remove forgets a server (adopted and recorded by its cluster, or deleted).
func (p *Pool) Remove(ctx context.Context, serverID string) error {
	return p.change(ctx, "remove worker "+serverID+" from the pool", func(d *pool.Doc) error {
		d.Remove(serverID)
		return nil
	})
}
