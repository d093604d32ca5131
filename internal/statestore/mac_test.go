package statestore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// editHeader rewrites an object's header JSON as a bucket writer would: the edit is made, the
// lengths and the integrity trailer are fixed, the MAC is left as it was (it cannot be remade
// without the state key).
func editHeader(t *testing.T, obj []byte, edit func(*wireHeader)) []byte {
	t.Helper()
	rh, err := decodeHeader(obj)
	if err != nil {
		t.Fatal(err)
	}
	h := rh.header
	edit(&h)
	hj, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(magic), obj[len(magic)])
	out = binary.BigEndian.AppendUint32(out, uint32(len(hj)))
	out = append(out, hj...)
	out = append(out, obj[len(rh.signed):]...)
	return reseal(out)
}

// TestHeaderMAC is hole 4 of issue 11: anyone who can write to the bucket edited the public header
// (expires 2099 spared the cluster from the reaper; daily_cost_nanos 1 defeated the budget). List
// must not return an edited header: it names the object as tampered instead. A format-1 object (no
// MAC) is still listed, authenticated by decrypting it; so are headers written before the MAC key
// was replaced.
func TestHeaderMAC(t *testing.T) {
	t.Parallel()
	inWorlds(t, func(t *testing.T, ctx context.Context, w *world, key string, s *Store) {
		expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		for _, c := range []string{"victim", "other"} {
			d := sampleDoc(c)
			d.Header.Expires = expires
			d.Header.Labels = map[string]string{"daily_cost_nanos": "4000000000"}
			if err := s.Put(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		orig := w.raw.read(t, stateKey("victim"))
		for _, tc := range []struct {
			name string
			edit func(*wireHeader)
		}{
			{"expires 2099", func(h *wireHeader) { h.Expires = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC) }},
			{"daily cost 1 nano-euro", func(h *wireHeader) { h.Labels["daily_cost_nanos"] = "1" }},
			{"another repository", func(h *wireHeader) { h.Repository = "someone/else" }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w.raw.write(t, stateKey("victim"), editHeader(t, orig, tc.edit))
				defer w.raw.write(t, stateKey("victim"), orig)
				fresh := w.open(t, key) // a new process
				hs, err := fresh.List(ctx)
				var le *ListError
				if !errors.Is(err, ErrTampered) || !errors.As(err, &le) || len(le.Bad) != 1 || le.Bad[0].Key != "clusters/victim.state" {
					t.Fatalf("List error: %v; want ErrTampered naming clusters/victim.state only", err)
				}
				if len(hs) != 1 || hs[0].Cluster != "other" {
					t.Fatalf("List returned %+v; the edited header must not be among them", hs)
				}
				// What it showed before the fix: the edited header, taken at its word.
				un, _ := fresh.ListUnverified(ctx)
				if len(un) != 2 {
					t.Fatalf("ListUnverified: %d headers", len(un))
				}
			})
		}

		t.Run("format 1 object authenticated by decryption", func(t *testing.T) {
			obj, err := sealV1(ctx, s.keeper, wireHeader{Object: objectState, Header: Header{Cluster: "legacy", Serial: 4, Expires: expires}}, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			fileRaw(w.dir).write(t, stateKey("legacy"), obj)
			if w.name != "file" {
				return // versitygw serves files written behind its back without an ETag
			}
			hs, err := w.open(t, key).List(ctx)
			if err != nil || len(hs) != 3 || hs[0].Cluster != "legacy" || !hs[0].Expires.Equal(expires) {
				t.Fatalf("List with a format 1 object: %+v, %v", hs, err)
			}
			edited := editHeader(t, obj, func(h *wireHeader) { h.Expires = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC) })
			fileRaw(w.dir).write(t, stateKey("legacy"), edited)
			if _, err := w.open(t, key).List(ctx); !errors.Is(err, ErrTampered) {
				t.Fatalf("an edited format 1 header: %v, want ErrTampered", err)
			}
		})

		t.Run("MAC key deleted: a new one, old headers still listed", func(t *testing.T) {
			if err := s.be.remove(ctx, stateKey("legacy")); err != nil && !errors.Is(err, errNotExist) {
				t.Fatal(err)
			}
			if err := s.be.remove(ctx, keyMAC); err != nil {
				t.Fatal(err)
			}
			fresh := w.open(t, key)
			if err := fresh.Put(ctx, sampleDoc("newer")); err != nil { // makes a new MAC key
				t.Fatal(err)
			}
			hs, err := w.open(t, key).List(ctx)
			if err != nil || len(hs) != 3 {
				t.Fatalf("after a new MAC key: %+v, %v; want 3 headers", hs, err)
			}
		})

		t.Run("MAC key replaced by garbage", func(t *testing.T) {
			w.raw.write(t, keyMAC, []byte("not a wrapped key"))
			_, err := w.open(t, key).List(ctx)
			if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), keyMAC) {
				t.Fatalf("List with a garbage MAC key: %v; want ErrWrongKey naming %s", err, keyMAC)
			}
		})
	})
}
