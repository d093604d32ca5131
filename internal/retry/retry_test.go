package retry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// The waits of each spread, attempt by attempt: doubling from Wait up to MaxWait.
func TestDelay(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		p      Policy
		lo, hi []time.Duration // bounds of the waits after attempts 1, 2, 3, 4
	}{
		{"fixed interval", Policy{Wait: 500 * ms, MaxWait: 500 * ms}, []time.Duration{500 * ms, 500 * ms, 500 * ms, 500 * ms}, []time.Duration{500 * ms, 500 * ms, 500 * ms, 500 * ms}},
		{"doubling, no jitter", Policy{Wait: 20 * ms}, []time.Duration{20 * ms, 40 * ms, 80 * ms, 160 * ms}, []time.Duration{20 * ms, 40 * ms, 80 * ms, 160 * ms}},
		{"half jitter, capped", Policy{Wait: 50 * ms, MaxWait: 150 * ms, Jitter: HalfJitter}, []time.Duration{25 * ms, 50 * ms, 75 * ms, 75 * ms}, []time.Duration{50 * ms, 100 * ms, 150 * ms, 150 * ms}},
		{"a quarter more", Policy{Wait: time.Second, Jitter: QuarterMore}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			[]time.Duration{1250 * ms, 2500 * ms, 5 * time.Second, 10 * time.Second}},
		{"no wait", Policy{}, []time.Duration{0, 0, 0, 0}, []time.Duration{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 { // the jitter is random: every draw stays in bounds
				for i := range tc.lo {
					if d := tc.p.Delay(i + 1); d < tc.lo[i] || d > tc.hi[i] {
						t.Fatalf("wait after attempt %d: %v, want within [%v, %v]", i+1, d, tc.lo[i], tc.hi[i])
					}
				}
			}
		})
	}
}

// waits is a Sleep that records the waits instead of making them.
type waits []time.Duration

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	*w = append(*w, d)
	return ctx.Err()
}

var errAgain = errors.New("not yet")

// What Do returns and waits for, outcome by outcome.
func TestDo(t *testing.T) {
	ok := Outcome{}
	again := Outcome{Err: errAgain, Retry: true}
	after := func(d time.Duration) Outcome { return Outcome{Err: errAgain, Retry: true, After: d} }
	final := Outcome{Err: errors.New("refused")}
	s := time.Second
	for _, tc := range []struct {
		name     string
		p        Policy
		outcomes []Outcome
		err      string // "" for success
		tries    int
		waits    []time.Duration
	}{
		{"success at once", Policy{Wait: s}, []Outcome{ok}, "", 1, nil},
		{"after two failures", Policy{Wait: s}, []Outcome{again, again, ok}, "", 3, []time.Duration{s, 2 * s}},
		{"a final error is not retried", Policy{Wait: s}, []Outcome{final}, "refused", 1, nil},
		{"attempts run out: the last error", Policy{Attempts: 3, Wait: s}, []Outcome{again, again, again, ok}, "not yet", 3, []time.Duration{s, 2 * s}},
		{"the server's longer wait", Policy{Wait: s}, []Outcome{after(45 * s), ok}, "", 2, []time.Duration{45 * s}},
		{"the server's shorter wait: the policy's", Policy{Wait: 2 * s}, []Outcome{after(s), ok}, "", 2, []time.Duration{2 * s}},
		{"a wait over MaxAfter is cut", Policy{Wait: s, MaxAfter: 10 * s}, []Outcome{after(60 * s), ok}, "", 2, []time.Duration{10 * s}},
		{"a wait over MaxAfter ends the retries", Policy{Wait: s, MaxAfter: 10 * s, GiveUpOverMaxAfter: true}, []Outcome{after(60 * s), ok}, "not yet", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w waits
			tc.p.Sleep = w.sleep
			tries, dropped := 0, 0
			err := tc.p.Do(t.Context(), "thing", func(_ context.Context, attempt int) Outcome {
				if attempt != tries+1 {
					t.Fatalf("attempt %d after %d tries", attempt, tries)
				}
				o := tc.outcomes[tries]
				tries++
				o.Drop = func() { dropped++ }
				return o
			})
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if tries != tc.tries || !slices.Equal(w, tc.waits) {
				t.Errorf("%d tries after waits %v, want %d after %v", tries, w, tc.tries, tc.waits)
			}
			if dropped != len(tc.waits) {
				t.Errorf("%d outcomes dropped, want one per new attempt (%d)", dropped, len(tc.waits))
			}
		})
	}
}

// A context that ends while waiting stops the retries with what ran and why.
func TestDoStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("the run's deadline")
	tries := 0
	err := Policy{Wait: time.Millisecond}.Do(ctx, "bootstrap", func(context.Context, int) Outcome {
		tries++
		if tries == 2 {
			cancel(stop)
		}
		return Outcome{Err: errAgain, Retry: true}
	})
	var s *Stopped
	if !errors.As(err, &s) || s.Attempts != 2 || !errors.Is(err, stop) || !errors.Is(err, errAgain) {
		t.Fatalf("err %v (%#v), want Stopped after 2 attempts wrapping the cause and the last error", err, s)
	}
	if want := "bootstrap: gave up after 2 attempts (the run's deadline); last error: not yet"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

// Each attempt gets its own deadline; the caller's context outlives it.
func TestAttemptTimeout(t *testing.T) {
	var deadlines []time.Duration
	err := Policy{Attempts: 2, Wait: time.Millisecond, AttemptTimeout: 50 * time.Millisecond}.Do(t.Context(), "dial", func(ctx context.Context, _ int) Outcome {
		dl, ok := ctx.Deadline()
		if !ok {
			t.Fatal("an attempt without a deadline")
		}
		deadlines = append(deadlines, time.Until(dl))
		<-ctx.Done()
		return Outcome{Err: ctx.Err(), Retry: true}
	})
	if !errors.Is(err, context.DeadlineExceeded) || len(deadlines) != 2 || t.Context().Err() != nil {
		t.Fatalf("err %v after %d attempts", err, len(deadlines))
	}
	for _, d := range deadlines {
		if d <= 0 || d > 50*time.Millisecond {
			t.Errorf("an attempt's deadline in %v, want within 50ms", d)
		}
	}
}
