package imagefactory

import (
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// observingWriter stands for the connection: at the moment bytes reach it (the moment a client
// can have them), it records what the factory's counter says.
type observingWriter struct {
	*httptest.ResponseRecorder
	served  *atomic.Int64
	seen    []int64
	refuse  int // accept only this many bytes of the next write (0: all)
	written int64
}

func (o *observingWriter) Write(p []byte) (int, error) {
	o.seen = append(o.seen, o.served.Load())
	if o.refuse > 0 && o.refuse < len(p) {
		n, _ := o.ResponseRecorder.Write(p[:o.refuse])
		o.written += int64(n)
		return n, errors.New("connection reset")
	}
	n, err := o.ResponseRecorder.Write(p)
	o.written += int64(n)
	return n, err
}

// The figure a test reads once its client has the whole body must already include every byte of
// it (TestStreamImageMemory once saw "stored 268435456 bytes, served 268402688": the last chunk was
// counted only after the write that delivered it had returned).
func TestServedBytesCountedBeforeTheClientHasThem(t *testing.T) {
	var served atomic.Int64
	o := &observingWriter{ResponseRecorder: httptest.NewRecorder(), served: &served}
	cw := &countingWriter{ResponseWriter: o, served: &served}
	for _, chunk := range [][]byte{make([]byte, 100), make([]byte, 7), make([]byte, 32768)} {
		before := served.Load()
		if _, err := cw.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if got := o.seen[len(o.seen)-1]; got != before+int64(len(chunk)) {
			t.Fatalf("while %d bytes reached the client the counter said %d, want %d", len(chunk), got, before+int64(len(chunk)))
		}
	}
	if served.Load() != o.written {
		t.Fatalf("served %d, client got %d", served.Load(), o.written)
	}

	// A write the connection refuses in part is counted for what it took only.
	o.refuse = 10
	if _, err := cw.Write(make([]byte, 50)); err == nil {
		t.Fatal("a refused write reported no error")
	}
	if served.Load() != o.written {
		t.Fatalf("after a refused write: served %d, client got %d", served.Load(), o.written)
	}

	// A cut response counts exactly the bytes before the cut.
	var cutServed atomic.Int64
	oc := &observingWriter{ResponseRecorder: httptest.NewRecorder(), served: &cutServed}
	cc := &countingWriter{ResponseWriter: oc, served: &cutServed, cut: 64}
	if _, err := cc.Write(make([]byte, 100)); !errors.Is(err, errCut) {
		t.Fatalf("cut write: %v", err)
	}
	if cutServed.Load() != 64 || oc.written != 64 || !cc.cutHit {
		t.Fatalf("cut: served %d, written %d, cutHit %v", cutServed.Load(), oc.written, cc.cutHit)
	}
}
