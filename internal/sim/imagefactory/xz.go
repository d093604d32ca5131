package imagefactory

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// --- xz stream made of uncompressed LZMA2 chunks ---
//
// metal-amd64.raw.xz is served as a valid .xz stream (the .xz file format,
// version 1.2.1, tukaani.org) written by hand for the same reason as the zstd
// frame: no xz encoder is in the module graph, and the stream must be
// generated on the fly with random access for Range. The stream has one
// block with one LZMA2 filter whose chunks are all "uncompressed" chunks
// (control byte 0x01 for the first, which resets the dictionary, 0x02 for
// the others, at most 64 KiB each), and check type None, so that no checksum
// over the whole image must be computed before its end is served. Any
// conforming decoder (xz -dc on the rescue system) decompresses it.

const (
	xzChunk      = 64 << 10 // largest uncompressed LZMA2 chunk
	xzHeaderLen  = 12       // stream header
	xzBlockHdLen = 12       // block header: size, flags, filter flags, padding, CRC32
	xzDataStart  = xzHeaderLen + xzBlockHdLen
)

type xzStream struct {
	g    generator
	tail []byte // end of LZMA2 + block padding + index + stream footer
}

func newXZ(g generator) xzStream {
	z := xzStream{g: g}
	comp := z.chunksLen() + 1 // + end-of-LZMA2 marker
	tail := []byte{0x00}
	for (comp+int64(len(tail))-1)%4 != 0 {
		tail = append(tail, 0) // block padding: compressed data to a multiple of 4
	}
	// Index: indicator, one record (unpadded size, uncompressed size), padding, CRC32.
	idx := []byte{0x00}
	idx = binary.AppendUvarint(idx, 1)
	idx = binary.AppendUvarint(idx, uint64(xzBlockHdLen+comp)) // check None adds nothing
	idx = binary.AppendUvarint(idx, uint64(g.size))
	for len(idx)%4 != 0 {
		idx = append(idx, 0)
	}
	idx = binary.LittleEndian.AppendUint32(idx, crc32.ChecksumIEEE(idx))
	tail = append(tail, idx...)
	// Stream footer: CRC32 of (backward size, flags), backward size, flags, "YZ".
	foot := binary.LittleEndian.AppendUint32(nil, uint32(len(idx)/4-1))
	foot = append(foot, 0x00, 0x00)
	tail = binary.LittleEndian.AppendUint32(tail, crc32.ChecksumIEEE(foot))
	tail = append(tail, foot...)
	tail = append(tail, 'Y', 'Z')
	z.tail = tail
	return z
}

func (z xzStream) chunks() int64 { return (z.g.size + xzChunk - 1) / xzChunk }

func (z xzStream) chunksLen() int64 { return 3*z.chunks() + z.g.size }

// Size is the length of the whole .xz stream.
func (z xzStream) Size() int64 { return xzDataStart + z.chunksLen() + int64(len(z.tail)) }

func xzHead() []byte {
	h := []byte{0xFD, '7', 'z', 'X', 'Z', 0x00, 0x00, 0x00} // magic, stream flags: check None
	h = binary.LittleEndian.AppendUint32(h, crc32.ChecksumIEEE(h[6:8]))
	// Block header: size byte (12/4-1), flags (one filter, no sizes), LZMA2
	// filter id 0x21, one property byte: dictionary 1 MiB (2<<19, value 16).
	b := []byte{xzBlockHdLen/4 - 1, 0x00, 0x21, 0x01, 16, 0, 0, 0}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return append(h, b...)
}

// ReadAt fills p with the stream's bytes at off.
func (z xzStream) ReadAt(p []byte, off int64) (int, error) {
	want, err := readWant(p, off, z.Size())
	if err != nil {
		return 0, err
	}
	head := xzHead()
	tailStart := xzDataStart + z.chunksLen()
	n := 0
	for n < want {
		pos := off + int64(n)
		switch {
		case pos < xzDataStart:
			n += copy(p[n:want], head[pos:])
		case pos >= tailStart:
			n += copy(p[n:want], z.tail[pos-tailStart:])
		default:
			in := pos - xzDataStart
			i := in / (3 + xzChunk)
			at := in % (3 + xzChunk)
			l := min(int64(xzChunk), z.g.size-i*xzChunk)
			if at < 3 {
				ctl := byte(0x02)
				if i == 0 {
					ctl = 0x01
				}
				hdr := []byte{ctl, byte((l - 1) >> 8), byte(l - 1)}
				n += copy(p[n:want], hdr[at:])
				continue
			}
			at -= 3
			k := int(min(int64(want-n), l-at))
			z.g.fill(p[n:n+k], i*xzChunk+at)
			n += k
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
