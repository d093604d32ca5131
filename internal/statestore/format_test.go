package statestore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gocloud.dev/secrets/localsecrets"
)

func FuzzDecode(f *testing.F) {
	ctx := context.Background()
	var sk [32]byte
	keeper := localsecrets.NewKeeper(sk)
	good, err := seal(ctx, keeper, wireHeader{Object: objectState, Header: Header{Format: FormatVersion, Cluster: "c", Serial: 3, Created: time.Unix(0, 0).UTC()}}, []byte("body"))
	if err != nil {
		f.Fatal(err)
	}
	art, err := seal(ctx, keeper, wireHeader{Object: objectArtifact, Name: "kubeconfig", Header: Header{Format: FormatVersion, Cluster: "c"}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(art)
	f.Add(good[:prefixLen+5])
	f.Add(reseal(append(bytes.Clone(good[:len(good)-trailerLen-3]), make([]byte, trailerLen)...)))
	f.Add([]byte(magic + "\x01\x00\x00\x00\x02{}"))
	f.Add([]byte(magic + "\x01\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, end, herr := decodeHeader(data)
		env, err := decode(data)
		if err != nil {
			return
		}
		if herr != nil || end > len(data) {
			t.Fatalf("decode accepted what decodeHeader refused: %v", herr)
		}
		if env.header.Cluster != h.Cluster || len(env.nonce) != nonceLen || len(env.wrapped) == 0 {
			t.Fatalf("inconsistent envelope: %+v", env.header)
		}
		// Whatever decodes must either decrypt or fail cleanly.
		if body, err := env.open(ctx, keeper); err == nil && bytes.Equal(data, good) && string(body) != "body" {
			t.Fatalf("good object decrypted to %q", body)
		}
	})
}
