package statestore

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// The header MAC. The public header is what List reads without decrypting anything, and what the
// callers of List decide on (expiry, budget): anyone who can write to the bucket could otherwise
// edit it. Each format-2 object carries HMAC-SHA256(macKey, magic … header JSON). macKey is derived
// (HKDF-SHA256, info macInfo) from a 32-byte master secret kept in the bucket at keyMAC, wrapped by
// the state key's keeper: a process unwraps it once (one keeper call), then verifies any number of
// headers with no keeper call. A bucket writer cannot forge the wrapped master (the keeper
// authenticates what it unwraps), only delete it: the next writer then makes a new one and the
// older headers no longer verify, which List answers by decrypting those documents (slower, as
// safe).
const (
	keyMAC      = "keys/header-mac"
	macInfo     = "pocbot statestore header MAC v1"
	macKeyLen   = 32
	macWrapping = "pocbot-header-mac-master-v1\x00" // bound inside the wrapped plaintext: a wrapped data key moved here is refused
)

// errNoMACKey: no header has been written with a MAC in this bucket yet.
var errNoMACKey = errors.New("no header MAC key in the bucket yet")

func headerMAC(key, signed []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(signed)
	return m.Sum(nil)
}

// verifyHeader says whether rh's MAC is that of its bytes under key (false for format 1).
func verifyHeader(key []byte, rh rawHeader) bool {
	return len(rh.tag) == macLen && hmac.Equal(rh.tag, headerMAC(key, rh.signed))
}

// headerKey returns the process's header MAC key: unwrapped from the bucket once, then cached.
// With create, a bucket without one gets one (conditional create: concurrent first writers agree
// on the winner's); without, errNoMACKey.
func (s *Store) headerKey(ctx context.Context, create bool) ([]byte, error) {
	s.macMu.Lock()
	defer s.macMu.Unlock()
	if s.macKey != nil {
		return s.macKey, nil
	}
	for range 3 {
		wrapped, _, err := s.be.get(ctx, keyMAC)
		if err == nil {
			return s.unwrapMAC(ctx, wrapped)
		}
		if !errors.Is(err, errNotExist) {
			return nil, fmt.Errorf("read the header MAC key %s: %w", keyMAC, err)
		}
		if !create {
			return nil, errNoMACKey
		}
		master := make([]byte, 32)
		if _, err := rand.Read(master); err != nil {
			return nil, fmt.Errorf("generate the header MAC key: %w", err)
		}
		wrapped, err = s.keeper.Encrypt(ctx, append([]byte(macWrapping), master...))
		if err != nil {
			return nil, fmt.Errorf("wrap the header MAC key with the key of %s: %w", EnvStateKey, err)
		}
		if _, err := s.be.create(ctx, keyMAC, wrapped); errors.Is(err, errPrecondition) {
			continue // another process made it first: use theirs
		} else if err != nil {
			return nil, fmt.Errorf("write the header MAC key %s: %w", keyMAC, err)
		}
		return s.deriveMAC(master)
	}
	return nil, fmt.Errorf("header MAC key %s: %w: it kept appearing and vanishing", keyMAC, ErrConflict)
}

func (s *Store) unwrapMAC(ctx context.Context, wrapped []byte) ([]byte, error) {
	plain, err := s.keeper.Decrypt(ctx, wrapped)
	if err != nil {
		return nil, fmt.Errorf("unwrap the header MAC key %s: %w: the key in %s is not the one that wrote it (or the object was replaced)", keyMAC, ErrWrongKey, EnvStateKey)
	}
	master, ok := bytes.CutPrefix(plain, []byte(macWrapping))
	if !ok || len(master) != 32 {
		return nil, fmt.Errorf("header MAC key %s: %w: it does not hold a pocbot MAC key", keyMAC, ErrTampered)
	}
	return s.deriveMAC(master)
}

func (s *Store) deriveMAC(master []byte) ([]byte, error) {
	k, err := hkdf.Key(sha256.New, master, nil, macInfo, macKeyLen)
	if err != nil {
		return nil, fmt.Errorf("derive the header MAC key: %w", err)
	}
	s.macKey = k
	return k, nil
}
