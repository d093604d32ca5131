package rescue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
)

// fallbacks are the stand-in's own decoders, by tool, for a machine without the CLI: zstd frames
// made of raw and RLE blocks only (decodeSimple), xz streams of uncompressed LZMA2 chunks only
// (decodeXZSimple) — what the Image Factory stand-in emits. Each says so on anything else.
var fallbacks = map[string]func(*bufio.Reader, io.Writer) error{"zstd": decodeSimple, "xz": decodeXZSimple}

// decompressWith runs tool -dc from r to w when the tool is installed, and the stand-in's own
// decoder of what the Image Factory stand-in emits otherwise.
func decompressWith(ctx context.Context, tool string, r io.Reader, w io.Writer, fallback func(*bufio.Reader, io.Writer) error) error {
	if bin, err := exec.LookPath(tool); err == nil {
		cmd := exec.CommandContext(ctx, bin, "-dc")
		cmd.Stdin, cmd.Stdout = r, w
		var stderr limited
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %v: %s", tool, err, stderr.String())
		}
		return nil
	}
	return fallback(bufio.NewReaderSize(r, 256<<10), w)
}

type limited struct{ b []byte }

func (l *limited) Write(p []byte) (int, error) {
	if len(l.b) < 4096 {
		l.b = append(l.b, p[:min(len(p), 4096-len(l.b))]...)
	}
	return len(p), nil
}
func (l *limited) String() string { return string(l.b) }

func decodeSimple(r *bufio.Reader, w io.Writer) error {
	var hdr [4]byte
	frames := 0
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) && frames > 0 {
				return nil
			}
			return fmt.Errorf("zstd: read frame magic: %w", err)
		}
		if binary.LittleEndian.Uint32(hdr[:]) != 0xFD2FB528 {
			return fmt.Errorf("zstd: bad magic %x", hdr)
		}
		frames++
		fhd, err := r.ReadByte()
		if err != nil {
			return err
		}
		single := fhd&0x20 != 0
		checksum := fhd&0x04 != 0
		skip := []int{0, 1, 2, 4}[fhd&3] // dictionary id
		if !single {
			skip++ // window descriptor
		}
		fcs := []int{0, 2, 4, 8}[fhd>>6]
		if single && fcs == 0 {
			fcs = 1
		}
		if _, err := r.Discard(skip + fcs); err != nil {
			return err
		}
		buf := make([]byte, 128<<10)
		for {
			var bh [3]byte
			if _, err := io.ReadFull(r, bh[:]); err != nil {
				return fmt.Errorf("zstd: truncated block header: %w", err)
			}
			v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
			last, typ, size := v&1 == 1, (v>>1)&3, int(v>>3)
			if size > len(buf) {
				return fmt.Errorf("zstd: block of %d bytes exceeds 128 KiB", size)
			}
			switch typ {
			case 0:
				if _, err := io.ReadFull(r, buf[:size]); err != nil {
					return fmt.Errorf("zstd: truncated raw block: %w", err)
				}
			case 1:
				b, err := r.ReadByte()
				if err != nil {
					return fmt.Errorf("zstd: truncated RLE block: %w", err)
				}
				for i := range buf[:size] {
					buf[i] = b
				}
			default:
				return errors.New("zstd: compressed blocks need the zstd CLI, which is not installed")
			}
			if _, err := w.Write(buf[:size]); err != nil {
				return err
			}
			if last {
				break
			}
		}
		if checksum {
			if _, err := r.Discard(4); err != nil {
				return err
			}
		}
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
