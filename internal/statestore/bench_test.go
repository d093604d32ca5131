package statestore

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
)

func BenchmarkPutGet256KiB(b *testing.B) {
	for _, mk := range []func(testing.TB) *world{fileWorld, s3World} {
		w := mk(b)
		key := newKey(b) // one per bucket: the bucket's MAC key is wrapped by it, and b.Run runs the body once per b.N tried
		b.Run(w.name, func(b *testing.B) {
			ctx := testCtx(b)
			s := w.open(b, key)
			body := make([]byte, 256<<10)
			rand.Read(body)
			name := "bench-" + randomID()[:8]
			doc := sampleDoc(name)
			doc.Body = body
			if err := s.Put(ctx, doc); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Put(ctx, doc); err != nil {
					b.Fatal(err)
				}
				got, err := s.Get(ctx, name)
				if err != nil || !bytes.Equal(got.Body, body) {
					b.Fatal(err)
				}
				doc = got
			}
		})
	}
}

func BenchmarkList1000(b *testing.B) {
	for _, mk := range []func(testing.TB) *world{fileWorld, s3World} {
		w := mk(b)
		key := newKey(b) // one per bucket: the bucket's MAC key is wrapped by it
		b.Run(w.name, func(b *testing.B) {
			ctx := testCtx(b)
			s := w.open(b, key)
			mk, err := s.headerKey(ctx, true)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 1000; i++ {
				d := sampleDoc(fmt.Sprintf("c%04d", i))
				d.Header.Serial, d.Header.Format = 1, FormatVersion
				obj, err := seal(ctx, s.keeper, mk, wireHeader{Object: objectState, Header: d.Header}, d.Body)
				if err != nil {
					b.Fatal(err)
				}
				fileRaw(w.dir).write(b, stateKey(d.Header.Cluster), obj)
			}
			// A fresh process: the MAC key is unwrapped by the first List only.
			keeper := &countingKeeper{inner: openKeeper(b, key)}
			lister := w.open(b, "", WithKeeper(keeper.keeper()))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				hs, err := lister.List(ctx)
				if err != nil || len(hs) != 1000 {
					b.Fatalf("%d headers, %v", len(hs), err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(keeper.calls())/float64(b.N*1000), "keeper-calls/header")
		})
	}
}
