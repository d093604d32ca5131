package statestore

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/secrets"
)

// FormatVersion is the object format this package writes. Version 2 adds the header's MAC;
// version 1 objects (no MAC) are still read: Get authenticates them by decrypting, List by
// falling back to Get.
const FormatVersion = 2

const formatV1 = 1

const (
	magic       = "PBSTATE\x00"
	prefixLen   = len(magic) + 1 + 4 // magic, format byte, header length
	nonceLen    = 12
	trailerLen  = sha256.Size
	maxHeader   = 64 << 10
	maxWrapped  = 4 << 10
	headerProbe = 4 << 10 // first range read of List: enough for any ordinary header
	macLen      = sha256.Size
)

// Object kinds stored in the wire header, so that an artifact cannot pass for a state document.
const (
	objectState    = "state"
	objectArtifact = "artifact"
	objectShared   = "shared" // a document of the whole bucket (the parked-worker pool)
)

// Header is the public part of a document: readable without the key.
type Header struct {
	Format      int               `json:"format"`
	Cluster     string            `json:"cluster"`
	Repository  string            `json:"repository,omitempty"`
	Number      int               `json:"number,omitempty"`
	Kind        string            `json:"kind,omitempty"` // "issue", "pull" or ""
	RequestedBy string            `json:"requested_by,omitempty"`
	Created     time.Time         `json:"created"`
	Expires     time.Time         `json:"expires,omitzero"`
	Phase       string            `json:"phase,omitempty"`
	Serial      int64             `json:"serial"`
	Labels      map[string]string `json:"labels,omitempty"` // other public metadata ("keep": "true", …)
}

// wireHeader is what is written: the Header plus what kind of object this is.
type wireHeader struct {
	Object string `json:"object"`
	Name   string `json:"name,omitempty"` // artifact name
	Header
}

// envelope is a decoded object, not yet decrypted.
type envelope struct {
	header     wireHeader
	signed     []byte // what the MAC covers (format 2), for verifyHeader
	tag        []byte // the header's MAC; nil in format 1
	wrapped    []byte
	nonce      []byte
	ciphertext []byte
	aad        []byte // magic … nonce
}

// seal encrypts body under a fresh data key wrapped by keeper, and authenticates the header
// with macKey (HMAC-SHA256 over everything up to the end of the header JSON).
func seal(ctx context.Context, keeper *secrets.Keeper, macKey []byte, h wireHeader, body []byte) ([]byte, error) {
	if len(macKey) != macKeyLen {
		return nil, fmt.Errorf("header MAC key of %d bytes, want %d", len(macKey), macKeyLen)
	}
	h.Format = FormatVersion
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	if len(hj) > maxHeader {
		return nil, fmt.Errorf("header of %d bytes exceeds %d: too many labels", len(hj), maxHeader)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, fmt.Errorf("generate data key: %w", err)
	}
	wrapped, err := keeper.Encrypt(ctx, dataKey)
	if err != nil {
		return nil, fmt.Errorf("wrap data key with the key of %s: %w", EnvStateKey, err)
	}
	if len(wrapped) > maxWrapped {
		return nil, fmt.Errorf("wrapped data key of %d bytes exceeds %d", len(wrapped), maxWrapped)
	}
	nonce := make([]byte, nonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("generate nonce: %w", err)
	}
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, prefixLen+len(hj)+2+len(wrapped)+nonceLen+len(body)+aead.Overhead()+trailerLen)
	out = append(out, magic...)
	out = append(out, FormatVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(hj)))
	out = append(out, hj...)
	out = append(out, headerMAC(macKey, out)...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(wrapped)))
	out = append(out, wrapped...)
	out = append(out, nonce...)
	out = aead.Seal(out, nonce, body, out) // aad = everything so far
	sum := sha256.Sum256(out)
	return append(out, sum[:]...), nil
}

// Decode parses an object without decrypting it and checks its integrity checksum.
func decode(data []byte) (*envelope, error) {
	rh, err := decodeHeader(data)
	h, hEnd := rh.header, rh.end
	if errors.Is(err, errShortHeader) {
		return nil, fmt.Errorf("%w: object truncated inside its header (%d bytes)", ErrTampered, len(data))
	}
	if err != nil {
		return nil, err
	}
	if len(data) < hEnd+2+nonceLen+16+trailerLen {
		return nil, fmt.Errorf("%w: object truncated (%d bytes)", ErrTampered, len(data))
	}
	body, trailer := data[:len(data)-trailerLen], data[len(data)-trailerLen:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], trailer) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrTampered)
	}
	klen := int(binary.BigEndian.Uint16(body[hEnd:]))
	p := hEnd + 2
	if klen == 0 || klen > maxWrapped || len(body) < p+klen+nonceLen+16 {
		return nil, fmt.Errorf("%w: bad wrapped key length %d", ErrTampered, klen)
	}
	e := &envelope{header: h, signed: rh.signed, tag: rh.tag}
	e.wrapped = body[p : p+klen]
	p += klen
	e.nonce = body[p : p+nonceLen]
	p += nonceLen
	e.aad = body[:p]
	e.ciphertext = body[p:]
	return e, nil
}

// rawHeader is a decoded, not yet authenticated, header.
type rawHeader struct {
	header wireHeader
	signed []byte // magic … header JSON: what the MAC covers
	tag    []byte // format 2: the MAC; format 1: nil
	end    int    // offset just after the header (and its MAC)
}

// decodeHeader parses the plaintext header from the start of an object (a prefix is enough).
// With errShortHeader, end says how many bytes are needed.
func decodeHeader(data []byte) (rawHeader, error) {
	var rh rawHeader
	h := &rh.header
	if len(data) < prefixLen || string(data[:len(magic)]) != magic {
		return rh, fmt.Errorf("%w: not a pocbot state object (bad magic)", ErrTampered)
	}
	v := int(data[len(magic)])
	if v != FormatVersion && v != formatV1 {
		if v > FormatVersion {
			return rh, fmt.Errorf("object format %d is newer than this pocbot understands (%d): upgrade pocbot", v, FormatVersion)
		}
		return rh, fmt.Errorf("%w: unknown object format %d", ErrTampered, v)
	}
	hlen := int(binary.BigEndian.Uint32(data[len(magic)+1:]))
	if hlen == 0 || hlen > maxHeader {
		return rh, fmt.Errorf("%w: bad header length %d", ErrTampered, hlen)
	}
	jsonEnd := prefixLen + hlen
	rh.end = jsonEnd
	if v == FormatVersion {
		rh.end += macLen
	}
	if len(data) < rh.end {
		return rh, errShortHeader
	}
	dec := json.NewDecoder(bytes.NewReader(data[prefixLen:jsonEnd]))
	if err := dec.Decode(h); err != nil {
		return rh, fmt.Errorf("%w: header is not valid JSON: %v", ErrTampered, err)
	}
	if dec.More() {
		return rh, fmt.Errorf("%w: trailing bytes after the header", ErrTampered)
	}
	if h.Format != v || (h.Object != objectState && h.Object != objectArtifact && h.Object != objectShared) {
		return rh, fmt.Errorf("%w: header says format %d, object %q", ErrTampered, h.Format, h.Object)
	}
	rh.signed = data[:jsonEnd]
	if v == FormatVersion {
		rh.tag = data[jsonEnd:rh.end]
	}
	return rh, nil
}

// errShortHeader asks List for a longer range read.
var errShortHeader = errors.New("header longer than the bytes read")

// open decrypts an envelope. A keeper failure means the wrong key, because decode has already
// checked that the bytes are those that were written.
func (e *envelope) open(ctx context.Context, keeper *secrets.Keeper) ([]byte, error) {
	dataKey, err := keeper.Decrypt(ctx, e.wrapped)
	if err != nil {
		return nil, ErrWrongKey
	}
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, fmt.Errorf("%w: data key of %d bytes", ErrTampered, len(dataKey))
	}
	body, err := aead.Open(nil, e.nonce, e.ciphertext, e.aad)
	if err != nil {
		// The checksum matched and the key unwrapped: the parts were put together on purpose
		// (e.g. a header moved from another object).
		return nil, fmt.Errorf("%w: authentication failed (header and body do not belong together)", ErrTampered)
	}
	return body, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("AES key: %w", err)
	}
	return cipher.NewGCM(block)
}
