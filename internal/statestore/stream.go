package statestore

import (
	"bufio"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"gocloud.dev/blob"
)

// Streamed artifacts: an artifact too large to hold in memory twice (an etcd snapshot), read
// from an io.Reader and written encrypted as it is read — nothing of it in plaintext on a disk,
// nor whole in memory. Same envelope idea as a document (a fresh data key wrapped by the keeper,
// the header bound as associated data), but the body is cut into segments, each sealed on its
// own, so a reader can decrypt as it reads (the STREAM construction):
//
//	"PBSTREAM" | u8 version | u32 hlen | header JSON | u16 klen | wrapped data key |
//	7-byte nonce prefix | segments
//	segment: u32 length | AES-256-GCM(plaintext ≤ 64 KiB), nonce = prefix | u32 index | u8 last,
//	         associated data = SHA-256 of everything before the segments
//
// The last segment (flag 1, possibly empty) marks the end, so a truncated object fails to open.
const (
	streamMagic     = "PBSTREAM"
	streamVersion   = 1
	streamSegment   = 64 << 10
	streamPrefixLen = 7
	objectStream    = "stream"
)

// ArtifactSum is what a streamed artifact's plaintext was: its size and SHA-256.
type ArtifactSum struct {
	Size   int64
	SHA256 [sha256.Size]byte
}

func (a ArtifactSum) String() string {
	return fmt.Sprintf("%d bytes, sha256 %s", a.Size, hex.EncodeToString(a.SHA256[:]))
}

// streamBackend is what a backend needs to stream an object in and out.
type streamBackend interface {
	// writeStream creates or replaces key with what fill writes; the object appears only if
	// fill returns nil.
	writeStream(ctx context.Context, key string, fill func(io.Writer) error) error
	readStream(ctx context.Context, key string) (io.ReadCloser, error)
}

// PutArtifactStream encrypts what r yields into the artifact name of cluster, segment by
// segment, and returns the size and SHA-256 of the plaintext. The object replaces any earlier
// one only once complete; a failed read of r leaves the earlier one (or none).
func (s *Store) PutArtifactStream(ctx context.Context, cluster, name string, r io.Reader) (ArtifactSum, error) {
	if err := checkCluster(cluster); err != nil {
		return ArtifactSum{}, err
	}

	if !nameRE.MatchString(name) {
		return ArtifactSum{}, fmt.Errorf("artifact name %q: use letters, digits, '.', '_', '-'", name)
	}

	sb, ok := s.be.(streamBackend)
	if !ok {
		return ArtifactSum{}, fmt.Errorf("write artifact %q of cluster %q: the state backend %s cannot stream", name, cluster, s.be.describe())
	}

	seal, err := s.newStreamSealer(ctx, cluster, name)
	if err != nil {
		return ArtifactSum{}, err
	}

	if err := sb.writeStream(ctx, artifactKey(cluster, name), func(w io.Writer) error { return seal.copy(ctx, w, r) }); err != nil {
		return ArtifactSum{}, fmt.Errorf("write artifact %q of cluster %q: %w", name, cluster, err)
	}

	return seal.sum(), nil
}

// streamSealer writes one streamed artifact: its head (magic, header, wrapped data key, nonce
// prefix), then the source's segments, each sealed with the head as associated data.
type streamSealer struct {
	head      []byte
	ad        [sha256.Size]byte
	aead      cipher.AEAD
	prefix    []byte
	plainHash hash.Hash
	size      int64
}

// newStreamSealer makes the artifact's data key, wraps it with the keeper, and lays out the head.
func (s *Store) newStreamSealer(ctx context.Context, cluster, name string) (*streamSealer, error) {
	h := wireHeader{Object: objectStream, Name: name, Header: Header{Format: streamVersion, Cluster: cluster, Created: s.now().UTC()}}

	hj, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}

	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, fmt.Errorf("generate data key: %w", err)
	}

	wrapped, err := s.keeper.Encrypt(ctx, dataKey)
	if err != nil {
		return nil, fmt.Errorf("wrap data key with the key of %s: %w", EnvStateKey, err)
	}

	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}

	head := make([]byte, 0, len(streamMagic)+7+len(hj)+len(wrapped)+streamPrefixLen)
	head = append(head, streamMagic...)
	head = append(head, streamVersion)
	head = binary.BigEndian.AppendUint32(head, uint32(len(hj)))
	head = append(head, hj...)
	head = binary.BigEndian.AppendUint16(head, uint16(len(wrapped)))
	head = append(head, wrapped...)

	prefix := make([]byte, streamPrefixLen)
	if _, err := rand.Read(prefix); err != nil {
		return nil, fmt.Errorf("generate nonce prefix: %w", err)
	}

	head = append(head, prefix...)

	return &streamSealer{head: head, ad: sha256.Sum256(head), aead: aead, prefix: prefix, plainHash: sha256.New()}, nil
}

// copy writes the head, then r segment by segment until r ends, the last segment flagged.
func (ss *streamSealer) copy(ctx context.Context, w io.Writer, r io.Reader) error {
	if _, err := w.Write(ss.head); err != nil {
		return err
	}

	buf := make([]byte, streamSegment)
	out := make([]byte, 0, 4+streamSegment+ss.aead.Overhead())

	// One segment ahead: a segment is the last one only when the reader has nothing after.
	n, rerr := io.ReadFull(r, buf)

	for index := uint32(0); ; index++ {
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read the artifact's source: %w", rerr)
		}

		last := rerr != nil

		seg := buf[:n]
		ss.plainHash.Write(seg)
		ss.size += int64(n)

		if err := ss.writeSegment(w, out, index, last, seg); err != nil {
			return err
		}

		if last {
			return nil
		}

		if err := ctx.Err(); err != nil {
			return err
		}

		n, rerr = io.ReadFull(r, buf)
		if n == 0 && errors.Is(rerr, io.EOF) {
			// The source ended on a segment boundary: an empty last segment closes it.
			return ss.writeSegment(w, out, index+1, true, nil)
		}
	}
}

// writeSegment seals one segment into out's storage and writes it with its length.
func (ss *streamSealer) writeSegment(w io.Writer, out []byte, index uint32, last bool, seg []byte) error {
	out = out[:4]
	out = ss.aead.Seal(out, segmentNonce(ss.prefix, index, last), seg, ss.ad[:])
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))

	_, err := w.Write(out)

	return err
}

// sum is the plaintext's size and SHA-256, once copy has returned.
func (ss *streamSealer) sum() ArtifactSum {
	sum := ArtifactSum{Size: ss.size}
	copy(sum.SHA256[:], ss.plainHash.Sum(nil))

	return sum
}

func segmentNonce(prefix []byte, index uint32, last bool) []byte {
	nonce := make([]byte, 0, nonceLen)
	nonce = append(nonce, prefix...)
	nonce = binary.BigEndian.AppendUint32(nonce, index)

	if last {
		return append(nonce, 1)
	}

	return append(nonce, 0)
}

// OpenArtifactStream returns a reader of a streamed artifact's plaintext, decrypted segment by
// segment; a damaged, truncated or foreign object fails a Read with ErrTampered (ErrWrongKey
// when the key does not unwrap it), a missing one fails here with ErrNotFound.
func (s *Store) OpenArtifactStream(ctx context.Context, cluster, name string) (io.ReadCloser, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}

	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("artifact name %q: use letters, digits, '.', '_', '-'", name)
	}

	sb, ok := s.be.(streamBackend)
	if !ok {
		return nil, fmt.Errorf("read artifact %q of cluster %q: the state backend %s cannot stream", name, cluster, s.be.describe())
	}

	rc, err := sb.readStream(ctx, artifactKey(cluster, name))
	if errors.Is(err, errNotExist) {
		return nil, fmt.Errorf("artifact %q of cluster %q: %w", name, cluster, ErrNotFound)
	}

	if err != nil {
		return nil, fmt.Errorf("read artifact %q of cluster %q: %w", name, cluster, err)
	}

	sr := &streamReader{rc: rc, br: bufio.NewReaderSize(rc, 4+streamSegment+64)}

	if err := sr.readHead(ctx, s, cluster, name); err != nil {
		_ = rc.Close()

		return nil, fmt.Errorf("read artifact %q of cluster %q: %w", name, cluster, err)
	}

	return sr, nil
}

// VerifyArtifactStream reads a streamed artifact back whole, decrypting it, and checks its size
// and SHA-256 against want: the proof that what was written can be read.
func (s *Store) VerifyArtifactStream(ctx context.Context, cluster, name string, want ArtifactSum) error {
	rc, err := s.OpenArtifactStream(ctx, cluster, name)
	if err != nil {
		return err
	}
	defer rc.Close() //nolint:errcheck

	h := sha256.New()

	n, err := io.Copy(h, rc)
	if err != nil {
		return fmt.Errorf("verify artifact %q of cluster %q: %w", name, cluster, err)
	}

	var got ArtifactSum

	got.Size = n
	copy(got.SHA256[:], h.Sum(nil))

	if got != want {
		return fmt.Errorf("verify artifact %q of cluster %q: %w: holds %s, written %s", name, cluster, ErrTampered, got, want)
	}

	return nil
}

type streamReader struct {
	rc     io.ReadCloser
	br     *bufio.Reader
	aead   cipher.AEAD
	prefix []byte
	ad     [sha256.Size]byte
	index  uint32
	plain  []byte
	done   bool
	err    error
}

func (r *streamReader) readHead(ctx context.Context, s *Store, cluster, name string) error {
	var fixed [len(streamMagic) + 5]byte
	if _, err := io.ReadFull(r.br, fixed[:]); err != nil {
		return fmt.Errorf("%w: not a streamed artifact (%w)", ErrTampered, err)
	}

	if string(fixed[:len(streamMagic)]) != streamMagic || fixed[len(streamMagic)] != streamVersion {
		return fmt.Errorf("%w: not a streamed artifact", ErrTampered)
	}

	hlen := binary.BigEndian.Uint32(fixed[len(streamMagic)+1:])
	if hlen > maxHeader {
		return fmt.Errorf("%w: header of %d bytes", ErrTampered, hlen)
	}

	hj := make([]byte, hlen)
	if _, err := io.ReadFull(r.br, hj); err != nil {
		return fmt.Errorf("%w: truncated header", ErrTampered)
	}

	var h wireHeader
	if err := json.Unmarshal(hj, &h); err != nil {
		return fmt.Errorf("%w: header: %w", ErrTampered, err)
	}

	if h.Object != objectStream || h.Cluster != cluster || h.Name != name {
		return fmt.Errorf("%w: the object holds %s %q of cluster %q", ErrTampered, h.Object, h.Name, h.Cluster)
	}

	var kl [2]byte
	if _, err := io.ReadFull(r.br, kl[:]); err != nil {
		return fmt.Errorf("%w: truncated key", ErrTampered)
	}

	wrapped := make([]byte, binary.BigEndian.Uint16(kl[:]))
	prefix := make([]byte, streamPrefixLen)

	if _, err := io.ReadFull(r.br, wrapped); err != nil {
		return fmt.Errorf("%w: truncated key", ErrTampered)
	}

	if _, err := io.ReadFull(r.br, prefix); err != nil {
		return fmt.Errorf("%w: truncated nonce", ErrTampered)
	}

	dataKey, err := s.keeper.Decrypt(ctx, wrapped)
	if err != nil {
		return ErrWrongKey
	}

	if r.aead, err = newGCM(dataKey); err != nil {
		return fmt.Errorf("%w: data key of %d bytes", ErrTampered, len(dataKey))
	}

	head := make([]byte, 0, len(fixed)+len(hj)+2+len(wrapped)+len(prefix))
	head = append(append(append(append(append(head, fixed[:]...), hj...), kl[:]...), wrapped...), prefix...)
	r.ad, r.prefix = sha256.Sum256(head), prefix

	return nil
}

func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.plain) == 0 {
		if r.err != nil {
			return 0, r.err
		}

		if r.done {
			return 0, io.EOF
		}

		r.err = r.next()
	}

	n := copy(p, r.plain)
	r.plain = r.plain[n:]

	return n, nil
}

// next decrypts the next segment; a segment that fails as not-last is tried as the last one.
func (r *streamReader) next() error {
	var l [4]byte
	if _, err := io.ReadFull(r.br, l[:]); err != nil {
		return fmt.Errorf("%w: the stream ends before its last segment", ErrTampered)
	}

	size := binary.BigEndian.Uint32(l[:])
	if size > streamSegment+uint32(r.aead.Overhead()) {
		return fmt.Errorf("%w: segment of %d bytes", ErrTampered, size)
	}

	ct := make([]byte, size)
	if _, err := io.ReadFull(r.br, ct); err != nil {
		return fmt.Errorf("%w: truncated segment %d", ErrTampered, r.index)
	}

	if pt, err := r.aead.Open(nil, segmentNonce(r.prefix, r.index, false), ct, r.ad[:]); err == nil {
		r.plain, r.index = pt, r.index+1

		return nil
	}

	pt, err := r.aead.Open(nil, segmentNonce(r.prefix, r.index, true), ct, r.ad[:])
	if err != nil {
		return fmt.Errorf("%w: segment %d fails authentication", ErrTampered, r.index)
	}

	if _, err := r.br.Peek(1); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: bytes after the last segment", ErrTampered)
	}

	r.plain, r.done = pt, true

	return nil
}

func (r *streamReader) Close() error { return r.rc.Close() }

// Backends.

func (b *blobBackend) writeStream(ctx context.Context, key string, fill func(io.Writer) error) error {
	// gocloud aborts an upload whose context is cancelled before Close: a failed fill leaves
	// no object.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()

	w, err := b.b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return b.mapErr(err, key)
	}

	if err := fill(w); err != nil {
		cancel()
		_ = w.Close()

		return err
	}

	if err := w.Close(); err != nil {
		return b.mapErr(err, key)
	}

	return nil
}

func (b *blobBackend) readStream(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, b.mapErr(err, key)
	}

	return r, nil
}

func (b *fileBackend) writeStream(ctx context.Context, key string, fill func(io.Writer) error) error {
	dst := b.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return mapFileErr(err, key)
	}

	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+"."+hex.EncodeToString(rnd[:])+".tmp")

	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return mapFileErr(err, key)
	}

	ok := false

	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()

	bw := bufio.NewWriterSize(f, 1<<20)
	if err := fill(bw); err != nil {
		return err
	}

	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}

	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}

	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}

	ok = true

	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)

		return mapFileErr(err, key)
	}

	syncDir(filepath.Dir(dst))

	return nil
}

func (b *fileBackend) readStream(_ context.Context, key string) (io.ReadCloser, error) {
	f, err := os.Open(b.path(key))
	if err != nil {
		return nil, mapFileErr(err, key)
	}

	return f, nil
}
