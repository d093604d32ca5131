package statestore

import (
	"context"
	"errors"
	"testing"
)

// conflicting is a memory of shared documents whose next conflicts writes are refused, as if
// another writer had changed the document in between.
type conflicting struct {
	body      []byte
	conflicts int
	puts      int
}

func (c *conflicting) GetShared(_ context.Context, name string) (*Shared, error) {
	if c.body == nil {
		return nil, ErrNotFound
	}
	return &Shared{Name: name, Body: c.body}, nil
}

func (c *conflicting) PutShared(_ context.Context, doc *Shared) error {
	c.puts++
	if c.conflicts > 0 {
		c.conflicts--
		return ErrConflict
	}
	c.body = doc.Body
	return nil
}

// UpdateShared starts from nothing when the document was never written, decides again after
// each conflict, and gives up naming the document after sharedTries.
func TestUpdateShared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	add := func(body []byte) ([]byte, error) { return append(body, 'x'), nil }
	c := &conflicting{conflicts: sharedTries - 1}
	if err := UpdateShared(ctx, c, "doc", add); err != nil || string(c.body) != "x" || c.puts != sharedTries {
		t.Fatalf("after %d conflicts: %v, body %q, %d writes", sharedTries-1, err, c.body, c.puts)
	}
	c.conflicts = sharedTries
	if err := UpdateShared(ctx, c, "doc", add); !errors.Is(err, ErrConflict) || string(c.body) != "x" {
		t.Fatalf("after %d conflicts: %v, body %q: want ErrConflict and the document unchanged", sharedTries, err, c.body)
	}
	refuse := errors.New("no")
	if err := UpdateShared(ctx, c, "doc", func([]byte) ([]byte, error) { return nil, refuse }); !errors.Is(err, refuse) {
		t.Fatalf("an update that fails: %v", err)
	}
}
