package talos

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Faults make the Talos API of every node that shares them misbehave, for harnesses that test
// what a client survives (the soak): a call answered Unavailable before it reaches the handler
// (apid proxies to machined over a local socket; a machined restarting or not answering reaches
// the client as that backend's gRPC status — internal/app/apid/pkg/backend @v1.14.0-rc.1 — and
// grpc-go documents Unavailable as "most likely a transient condition", safe to retry), and a
// call answered late. Which calls fail is not in any source: any call may, and none takes effect.
//
// Several harness steps may push rates at once: the strongest pushed rate applies until its pop.
type Faults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	pushed map[int]FaultRates
	next   int
}

// FaultRates are per-call probabilities.
type FaultRates struct {
	Unavailable float64
	Slow        float64
	SlowMax     time.Duration
}

// NewFaults returns faults whose draws follow seed, with no rate pushed.
func NewFaults(seed uint64) *Faults {
	return &Faults{rng: rand.New(rand.NewPCG(seed, seed^0x7a105)), pushed: map[int]FaultRates{}}
}

// Push applies r until the returned pop is called.
func (f *Faults) Push(r FaultRates) (pop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.pushed[id] = r
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.pushed, id)
	}
}

// draw decides one call: refused, or delayed by delay.
func (f *Faults) draw() (refuse bool, delay time.Duration) {
	if f == nil {
		return false, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var r FaultRates
	for _, p := range f.pushed {
		r.Unavailable = max(r.Unavailable, p.Unavailable)
		r.Slow = max(r.Slow, p.Slow)
		r.SlowMax = max(r.SlowMax, p.SlowMax)
	}
	if r == (FaultRates{}) {
		return false, 0
	}
	if f.rng.Float64() < r.Unavailable {
		return true, 0
	}
	if r.SlowMax > 0 && f.rng.Float64() < r.Slow {
		return false, time.Duration(f.rng.Int64N(int64(r.SlowMax)))
	}
	return false, 0
}

// apply is the faults' effect on one call, before its handler.
func (f *Faults) apply(ctx context.Context, method string) error {
	refuse, delay := f.draw()
	if refuse {
		return status.Errorf(codes.Unavailable, "%s: connection to machined lost (injected fault)", method)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return nil
}

func (n *Node) faultUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := n.opts.Faults.apply(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (n *Node) faultStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := n.opts.Faults.apply(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}
