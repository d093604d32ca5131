package statestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"gocloud.dev/secrets"
	"gocloud.dev/secrets/localsecrets"
)

// sealV1 writes an object of format 1 (before the header MAC), as an older pocbot did.
func sealV1(ctx context.Context, keeper *secrets.Keeper, h wireHeader, body []byte) ([]byte, error) {
	h.Format = formatV1
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	dataKey := make([]byte, 32)
	rand.Read(dataKey)
	wrapped, err := keeper.Encrypt(ctx, dataKey)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, nonceLen)
	rand.Read(nonce)
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}
	out := append([]byte(magic), formatV1)
	out = binary.BigEndian.AppendUint32(out, uint32(len(hj)))
	out = append(out, hj...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(wrapped)))
	out = append(out, wrapped...)
	out = append(out, nonce...)
	out = aead.Seal(out, nonce, body, out)
	sum := sha256.Sum256(out)
	return append(out, sum[:]...), nil
}

func FuzzDecode(f *testing.F) {
	ctx := f.Context()
	var sk [32]byte
	keeper := localsecrets.NewKeeper(sk)
	mk := bytes.Repeat([]byte{7}, macKeyLen)
	good, err := seal(ctx, keeper, mk, wireHeader{Object: objectState, Header: Header{Cluster: "c", Serial: 3, Created: time.Unix(0, 0).UTC()}}, []byte("body"))
	if err != nil {
		f.Fatal(err)
	}
	art, err := seal(ctx, keeper, mk, wireHeader{Object: objectArtifact, Name: "kubeconfig", Header: Header{Cluster: "c"}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	v1, err := sealV1(ctx, keeper, wireHeader{Object: objectState, Header: Header{Cluster: "c", Serial: 2}}, []byte("old body"))
	if err != nil {
		f.Fatal(err)
	}
	signedLen := func(obj []byte) int { return prefixLen + int(binary.BigEndian.Uint32(obj[len(magic)+1:])) }
	f.Add(good)
	f.Add(art)
	f.Add(v1)
	f.Add(good[:prefixLen+5])
	f.Add(good[:signedLen(good)+macLen/2])
	f.Add(reseal(append(bytes.Clone(good[:len(good)-trailerLen-3]), make([]byte, trailerLen)...)))
	f.Add(reseal(bytes.Replace(good, []byte(`"serial":3`), []byte(`"serial":9`), 1)))
	f.Add([]byte(magic + "\x02\x00\x00\x00\x02{}"))
	f.Add([]byte(magic + "\x01\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rh, herr := decodeHeader(data)
		env, err := decode(data)
		if herr == nil && verifyHeader(mk, rh) {
			// Nobody without mk can make a header verify: it must be one that seal wrote.
			if !bytes.HasPrefix(data, good[:signedLen(good)+macLen]) && !bytes.HasPrefix(data, art[:signedLen(art)+macLen]) {
				t.Fatalf("a header that seal did not write verifies: %q", rh.signed)
			}
		}
		if herr == nil && rh.header.Format == formatV1 && rh.tag != nil {
			t.Fatal("a format 1 header has a MAC")
		}
		if err != nil {
			return
		}
		if herr != nil || rh.end > len(data) {
			t.Fatalf("decode accepted what decodeHeader refused: %v", herr)
		}
		if env.header.Cluster != rh.header.Cluster || len(env.nonce) != nonceLen || len(env.wrapped) == 0 {
			t.Fatalf("inconsistent envelope: %+v", env.header)
		}
		// Whatever decodes must either decrypt or fail cleanly.
		body, err := env.open(ctx, keeper)
		if err == nil && bytes.Equal(data, good) && string(body) != "body" {
			t.Fatalf("good object decrypted to %q", body)
		}
		if err == nil && bytes.Equal(data, v1) && string(body) != "old body" {
			t.Fatalf("format 1 object decrypted to %q", body)
		}
	})
}
