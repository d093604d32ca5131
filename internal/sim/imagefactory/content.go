package imagefactory

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"sort"
)

// The artifacts are generated, never stored: every byte is a pure function of
// (schematic, version, artifact, offset). That keeps a 1 GiB image out of
// memory and off disk, and lets Range requests and tests read any part of an
// image without producing what comes before it.

const (
	// zstdBlock is the zstd maximum block size (Block_Maximum_Size = 128 KiB).
	zstdBlock = 128 << 10
	// zstdHeaderLen is magic(4) + frame header descriptor(1) +
	// window descriptor(1) + frame content size(8).
	zstdHeaderLen = 14
)

// generator yields the decompressed bytes of one artifact.
type generator struct {
	seed uint64
	size int64
	// qcow2 adds a QCOW2 v3 header; otherwise the image looks like a raw
	// GPT disk (protective MBR signature and "EFI PART" header) with every
	// fourth 128 KiB block zeroed so that the zstd frame has RLE blocks.
	qcow2 bool
}

func newGenerator(schematic, version, artifact string, size int64, qcow2 bool) generator {
	h := sha256.Sum256([]byte(schematic + "\x00" + version + "\x00" + artifact))
	return generator{seed: binary.LittleEndian.Uint64(h[:8]), size: size, qcow2: qcow2}
}

// splitmix64 is a counter-based generator: word i is computable directly,
// which is what makes random access (Range, ReadAt) cheap.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// zeroBlock reports whether raw block i is all zeros (never block 0, which
// carries the partition table).
func (g generator) zeroBlock(i int64) bool { return !g.qcow2 && i%4 == 3 }

// ReadAt fills p with the artifact's bytes at off.
func (g generator) ReadAt(p []byte, off int64) (int, error) {
	if off >= g.size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > g.size-off {
		n = int(g.size - off)
	}
	g.fill(p[:n], off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (g generator) fill(p []byte, off int64) {
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		blk := pos / zstdBlock
		end := (blk + 1) * zstdBlock
		chunk := p[done:min(len(p), done+int(end-pos))]
		if g.zeroBlock(blk) {
			clear(chunk)
		} else {
			g.fillRandom(chunk, pos)
		}
		done += len(chunk)
	}
	g.overlayHeader(p, off)
}

func (g generator) fillRandom(p []byte, off int64) {
	var w [8]byte
	i := 0
	for i < len(p) {
		pos := off + int64(i)
		word := pos / 8
		binary.LittleEndian.PutUint64(w[:], splitmix64(g.seed^uint64(word)))
		inWord := int(pos % 8)
		i += copy(p[i:], w[inWord:])
	}
}

// header returns the fixed bytes at the start of the artifact.
func (g generator) header() []byte {
	if g.qcow2 {
		h := make([]byte, 72)
		copy(h, "QFI\xfb")
		binary.BigEndian.PutUint32(h[4:], 3)               // version
		binary.BigEndian.PutUint32(h[20:], 16)             // cluster_bits
		binary.BigEndian.PutUint64(h[24:], uint64(g.size)) // virtual size (approximation)
		return h
	}
	h := make([]byte, 520)
	h[510], h[511] = 0x55, 0xAA
	copy(h[512:], "EFI PART")
	return h
}

func (g generator) overlayHeader(p []byte, off int64) {
	h := g.header()
	if off >= int64(len(h)) {
		return
	}
	if int64(len(h)) > g.size {
		h = h[:g.size]
	}
	copy(p, h[off:])
}

// --- zstd frame made of raw and RLE blocks ---
//
// The module graph has no zstd encoder importable without editing go.mod, so
// the stand-in emits a valid zstd frame (RFC 8878) by hand: raw blocks for
// random data, RLE blocks for zero runs. Any conforming decoder (the zstd CLI
// the rescue system runs) decompresses it. The window is 128 KiB with no
// Single_Segment flag, so the zstd CLI's default 128 MiB window limit never
// refuses it however large the image is.

type zstdFrame struct{ g generator }

func (z zstdFrame) blocks() int64 {
	if z.g.size == 0 {
		return 1 // one empty last raw block
	}
	return (z.g.size + zstdBlock - 1) / zstdBlock
}

// blockOffset is the offset of block i's header inside the frame: each block
// before i is full (only the last can be short), RLE blocks take 1 byte.
func (z zstdFrame) blockOffset(i int64) int64 {
	zeros := i / 4
	if z.g.qcow2 {
		zeros = 0
	}
	return zstdHeaderLen + 3*i + zeros + (i-zeros)*zstdBlock
}

func (z zstdFrame) rawLen(i int64) int64 {
	if z.g.size == 0 {
		return 0
	}
	return min(zstdBlock, z.g.size-i*zstdBlock)
}

func (z zstdFrame) encLen(i int64) int64 {
	if z.g.zeroBlock(i) {
		return 3 + 1
	}
	return 3 + z.rawLen(i)
}

// Size is the length of the compressed frame.
func (z zstdFrame) Size() int64 {
	n := z.blocks()
	return z.blockOffset(n-1) + z.encLen(n-1)
}

func (z zstdFrame) frameHeader() []byte {
	h := make([]byte, zstdHeaderLen)
	binary.LittleEndian.PutUint32(h, 0xFD2FB528)
	h[4] = 0xC0   // FCS_Field_Size 8 bytes, no single segment, no checksum, no dict
	h[5] = 7 << 3 // window 1<<(10+7) = 128 KiB
	binary.LittleEndian.PutUint64(h[6:], uint64(z.g.size))
	return h
}

func (z zstdFrame) blockHeader(i int64) []byte {
	var v uint32
	if i == z.blocks()-1 {
		v |= 1
	}
	if z.g.zeroBlock(i) {
		v |= 1 << 1 // RLE
	}
	v |= uint32(z.rawLen(i)) << 3
	return []byte{byte(v), byte(v >> 8), byte(v >> 16)}
}

// readWant is how many bytes of p a ReadAt at off fills from content of size: io.EOF at or
// past its end.
func readWant(p []byte, off, size int64) (int, error) {
	if off >= size {
		return 0, io.EOF
	}
	return int(min(int64(len(p)), size-off)), nil
}

// ReadAt fills p with the frame's bytes at off.
func (z zstdFrame) ReadAt(p []byte, off int64) (int, error) {
	want, err := readWant(p, off, z.Size())
	if err != nil {
		return 0, err
	}
	n := 0
	for n < want {
		pos := off + int64(n)
		if pos < zstdHeaderLen {
			n += copy(p[n:want], z.frameHeader()[pos:])
			continue
		}
		nb := z.blocks()
		i := int64(sort.Search(int(nb), func(k int) bool { return z.blockOffset(int64(k)) > pos })) - 1
		start := z.blockOffset(i)
		in := pos - start
		if in < 3 {
			n += copy(p[n:want], z.blockHeader(i)[in:])
			continue
		}
		in -= 3
		if z.g.zeroBlock(i) {
			p[n] = 0
			n++
			continue
		}
		k := int(min(int64(want-n), z.rawLen(i)-in))
		z.g.fill(p[n:n+k], i*zstdBlock+in)
		n += k
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
