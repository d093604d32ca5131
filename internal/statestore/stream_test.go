package statestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestArtifactStream: a streamed artifact reads back as written at every size around the
// segment boundary, is never in plaintext in the bucket, and fails to read when truncated,
// altered, moved, or read with another key; a source that fails half-way leaves the earlier
// object in place.
func TestArtifactStream(t *testing.T) {
	t.Parallel()
	inWorlds(t, func(t *testing.T, ctx context.Context, w *world, key string, s *Store) {

		for _, size := range []int{0, 1, streamSegment - 1, streamSegment, streamSegment + 1, 3*streamSegment + 17} {
			data := make([]byte, size)
			_, _ = rand.Read(data)

			sum, err := s.PutArtifactStream(ctx, "c", "etcd.snapshot", bytes.NewReader(data))
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}

			if sum.Size != int64(size) || sum.SHA256 != sha256.Sum256(data) {
				t.Fatalf("size %d: sum %s", size, sum)
			}

			if err := s.VerifyArtifactStream(ctx, "c", "etcd.snapshot", sum); err != nil {
				t.Fatalf("size %d: verify: %v", size, err)
			}

			rc, err := s.OpenArtifactStream(ctx, "c", "etcd.snapshot")
			if err != nil {
				t.Fatal(err)
			}

			got, err := io.ReadAll(iotest.OneByteReader(rc))
			_ = rc.Close()

			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("size %d: read back %d bytes, %v", size, len(got), err)
			}
		}

		plain := bytes.Repeat([]byte("etcd-plaintext-marker "), 10000)

		sum, err := s.PutArtifactStream(ctx, "c", "etcd.snapshot", bytes.NewReader(plain))
		if err != nil {
			t.Fatal(err)
		}

		raw := w.raw.read(t, "artifacts/c/etcd.snapshot")
		if bytes.Contains(raw, []byte("etcd-plaintext-marker")) {
			t.Fatal("streamed artifact stored in plaintext")
		}

		// A source that fails half-way: the earlier object stays, whole.
		broken := io.MultiReader(bytes.NewReader(plain[:100000]), iotest.ErrReader(errors.New("node went away")))
		if _, err := s.PutArtifactStream(ctx, "c", "etcd.snapshot", broken); err == nil {
			t.Fatal("a failing source was stored")
		}

		if err := s.VerifyArtifactStream(ctx, "c", "etcd.snapshot", sum); err != nil {
			t.Fatalf("the earlier object after a failed write: %v", err)
		}

		// The wrong sum is refused.
		other := sum
		other.Size++

		if err := s.VerifyArtifactStream(ctx, "c", "etcd.snapshot", other); !errors.Is(err, ErrTampered) {
			t.Fatalf("verify against another sum = %v", err)
		}

		for _, tc := range []struct {
			name string
			obj  []byte
		}{
			{"truncated half-way", raw[:len(raw)/2]},
			{"last segment cut", raw[:len(raw)-1]},
			{"byte flipped", func() []byte { b := bytes.Clone(raw); b[len(b)/2] ^= 1; return b }()},
			{"bytes appended", append(bytes.Clone(raw), 0, 0, 0, 0)},
		} {
			w.raw.write(t, "artifacts/c/bad", tc.obj)

			if err := s.VerifyArtifactStream(ctx, "c", "bad", sum); !errors.Is(err, ErrTampered) {
				t.Errorf("%s: %v, want ErrTampered", tc.name, err)
			}
		}

		w.raw.write(t, "artifacts/d/etcd.snapshot", raw)

		if err := s.VerifyArtifactStream(ctx, "d", "etcd.snapshot", sum); !errors.Is(err, ErrTampered) {
			t.Errorf("moved to another cluster: %v, want ErrTampered", err)
		}

		if err := w.open(t, newKey(t)).VerifyArtifactStream(ctx, "c", "etcd.snapshot", sum); !errors.Is(err, ErrWrongKey) {
			t.Errorf("another key: %v, want ErrWrongKey", err)
		}

		if _, err := s.OpenArtifactStream(ctx, "c", "missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing: %v, want ErrNotFound", err)
		}

		if err := s.DeleteArtifacts(ctx, "c"); err != nil {
			t.Fatal(err)
		}

		if _, err := s.OpenArtifactStream(ctx, "c", "etcd.snapshot"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after DeleteArtifacts: %v, want ErrNotFound", err)
		}
	})
}
