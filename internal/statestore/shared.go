package statestore

import (
	"context"
	"errors"
	"fmt"
)

const prefixShared = "shared/"

// Shared is an encrypted document that belongs to the whole bucket rather than to one cluster
// (the pool of parked workers every cluster of this bucket may adopt from). It is read and
// written whole; a write succeeds only if nobody wrote it since it was read, which is what
// makes a claim on one of its entries exclusive.
type Shared struct {
	Name    string
	Body    []byte
	version string
}

// GetShared reads and decrypts the shared document name (ErrNotFound when it was never written).
func (s *Store) GetShared(ctx context.Context, name string) (*Shared, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("shared document name %q: use letters, digits, '.', '_', '-'", name)
	}
	data, version, err := s.be.get(ctx, prefixShared+name)
	if errors.Is(err, errNotExist) {
		return nil, fmt.Errorf("shared document %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read shared document %q: %w", name, err)
	}
	_, body, err := s.open(ctx, data, objectShared, "", name)
	if err != nil {
		return nil, err
	}
	return &Shared{Name: name, Body: body, version: version}, nil
}

// PutShared writes doc: created only if it does not exist yet (doc never read), replaced only if
// unchanged since it was read. A concurrent writer yields ErrConflict: GetShared again, decide
// again, PutShared again.
func (s *Store) PutShared(ctx context.Context, doc *Shared) error {
	if !nameRE.MatchString(doc.Name) {
		return fmt.Errorf("shared document name %q: use letters, digits, '.', '_', '-'", doc.Name)
	}
	h := wireHeader{Object: objectShared, Name: doc.Name, Header: Header{Format: FormatVersion, Created: s.now().UTC()}}
	mk, err := s.headerKey(ctx, true)
	if err != nil {
		return fmt.Errorf("write shared document %q: %w", doc.Name, err)
	}
	data, err := seal(ctx, s.keeper, mk, h, doc.Body)
	if err != nil {
		return fmt.Errorf("encrypt shared document %q: %w", doc.Name, err)
	}
	key := prefixShared + doc.Name
	var version string
	if doc.version == "" {
		version, err = s.be.create(ctx, key, data)
	} else {
		version, err = s.be.replace(ctx, key, data, doc.version)
	}
	if errors.Is(err, errPrecondition) || (doc.version != "" && errors.Is(err, errNotExist)) {
		return fmt.Errorf("write shared document %q: %w: another writer changed it since it was read; read it again and retry", doc.Name, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("write shared document %q: %w", doc.Name, err)
	}
	doc.version = version
	return nil
}

// SharedDocs is what UpdateShared needs of a store: Store has it, tests give one in memory.
type SharedDocs interface {
	GetShared(ctx context.Context, name string) (*Shared, error)
	PutShared(ctx context.Context, doc *Shared) error
}

// sharedTries is how many times UpdateShared reads, decides and writes before it gives up on a
// document other writers keep changing.
const sharedTries = 5

// UpdateShared rewrites the shared document name with update(its body): nil when it was never
// written. The write is conditional on what was read; on ErrConflict it reads and updates again,
// sharedTries times in all.
func UpdateShared(ctx context.Context, s SharedDocs, name string, update func(body []byte) ([]byte, error)) error {
	var last error
	for range sharedTries {
		doc, err := s.GetShared(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			doc = &Shared{Name: name}
		case err != nil:
			return err
		}
		if doc.Body, err = update(doc.Body); err != nil {
			return err
		}
		if err = s.PutShared(ctx, doc); err == nil {
			return nil
		}
		if !errors.Is(err, ErrConflict) {
			return err
		}
		last = err
	}
	return fmt.Errorf("shared document %q kept changing: %w", name, last)
}
