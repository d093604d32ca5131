package rescue

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// decodeXZSimple decodes an xz stream whose LZMA2 chunks are all uncompressed, which is what the
// Image Factory stand-in emits, and says so on a compressed chunk.
func decodeXZSimple(r *bufio.Reader, w io.Writer) error {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("read stream header: %w", err)
	}
	if string(hdr[:6]) != "\xfd7zXZ\x00" {
		return errors.New("File format not recognized")
	}
	bsize, err := r.ReadByte()
	if err != nil || bsize == 0 {
		return errors.New("read block header: the stream has no block")
	}
	if _, err := r.Discard(int(bsize+1)*4 - 1); err != nil {
		return fmt.Errorf("read block header: %w", err)
	}
	buf := make([]byte, 64<<10)
	for {
		ctl, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("truncated LZMA2 stream: %w", err)
		}
		switch ctl {
		case 0x00:
			// End of LZMA2; padding, index and footer follow.
			_, err := io.Copy(io.Discard, r)
			return err
		case 0x01, 0x02:
			var sz [2]byte
			if _, err := io.ReadFull(r, sz[:]); err != nil {
				return fmt.Errorf("truncated LZMA2 chunk header: %w", err)
			}
			n := int(sz[0])<<8 | int(sz[1]) + 1
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				return fmt.Errorf("truncated LZMA2 chunk: %w", err)
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
		default:
			return errors.New("compressed LZMA2 chunks need the xz CLI, which is not installed")
		}
	}
}
