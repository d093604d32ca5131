package soak

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"github.com/pocbot/pocbot/internal/sim/syncio"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is a soak: a set of histories and how long to go on.
type Config struct {
	Options
	// Seeds are played first, in order (a replay, or CI's fixed set).
	Seeds []uint64
	// Keep, with one seed, plays only these events of its history (a shrunk replay).
	Keep []int
	// Duration: after Seeds, new random seeds until it is spent (0: Seeds only).
	Duration time.Duration
	// Events per history (default 50).
	Events int
	// NoPool plays the histories without the warm pool's scenes (GenerateNoPool).
	NoPool bool
	// ShrinkRuns bounds the runs spent shrinking one failing history (default 30; 0 after
	// setting NoShrink).
	ShrinkRuns int
	NoShrink   bool
	// ShrinkFor bounds the time spent shrinking one failing history (default 5 min): a long
	// soak that finds several failures still ends soon after its Duration.
	ShrinkFor time.Duration
	// Parallel histories run at once, each in its own world (default 1).
	Parallel int
	// Out receives the report: a line per history, each failure with its replay, and last the
	// summary line.
	Out io.Writer
}

// Summary is what a soak found.
type Summary struct {
	Histories, Events, Violations int
	// Writes, Pauses and ReadsAfterPause add up the histories' Result fields of those names.
	Writes, Pauses, ReadsAfterPause int
	// Handouts adds up the claims of a spare the pool's ledger checked; UnverifiedHandouts those
	// whose time it could not hold to the spare's expiry.
	Handouts, UnverifiedHandouts int
	Failures                     []Failure
}

// Failure is a failing history, shrunk.
type Failure struct {
	Seed       uint64
	NoPool     bool  // the history is GenerateNoPool's
	Keep       []int // the events of Generate(Seed) still in the shrunk history
	Violations []Violation
}

// Replay is the command that plays the shrunk history again.
func (f Failure) Replay() string {
	s := "make soak SEED=" + strconv.FormatUint(f.Seed, 10)
	if f.Keep != nil {
		idx := make([]string, len(f.Keep))
		for i, k := range f.Keep {
			idx[i] = strconv.Itoa(k)
		}
		s += " KEEP=" + strings.Join(idx, ",")
	}
	if f.NoPool {
		s += " NOPOOL=1"
	}
	return s
}

// Soak runs histories until the configuration is spent and reports them, Parallel at a time.
// The last line written to Out is `soak: N histories, M events, V violations`.
func Soak(ctx context.Context, c Config) (Summary, error) {
	if c.Events == 0 {
		c.Events = 50
	}
	if c.ShrinkRuns == 0 && !c.NoShrink {
		c.ShrinkRuns = 30
	}
	if c.Parallel < 1 {
		c.Parallel = 1
	}
	out := c.Out
	if out == nil {
		out = io.Discard
	}
	// Histories run in parallel and all report to Out.
	out = syncio.Writer(out)
	c.Out = out
	var (
		mu       sync.Mutex
		sum      Summary
		firstErr error
		next     int
	)
	deadline := time.Now().Add(c.Duration)
	// nextSeed hands out the fixed seeds, then new ones until the duration is spent.
	nextSeed := func() (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		i := next
		next++
		switch {
		case firstErr != nil || ctx.Err() != nil:
			return 0, false
		case i < len(c.Seeds):
			return c.Seeds[i], true
		case c.Duration > 0 && time.Now().Before(deadline):
			return randomSeed(), true
		}
		return 0, false
	}
	var wg sync.WaitGroup
	for range c.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed, ok := nextSeed()
				if !ok {
					return
				}
				f, res, err := c.one(ctx, seed)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				sum.Histories++
				sum.Events += res.Events
				sum.Writes += res.Writes
				sum.Pauses += res.Pauses
				sum.ReadsAfterPause += res.ReadsAfterPause
				sum.Handouts += res.Handouts
				sum.UnverifiedHandouts += res.UnverifiedHandouts
				if f != nil {
					sum.Violations += len(f.Violations)
					sum.Failures = append(sum.Failures, *f)
					fmt.Fprintf(out, "FAILED seed %d; replay the shortest failing history with: %s\n", seed, f.Replay())
					all := c.generate(seed)
					for _, k := range f.Keep {
						fmt.Fprintf(out, "  %3d %s\n", k, all[k])
					}
					for _, v := range f.Violations {
						fmt.Fprintf(out, "  violation: %s\n", v)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return sum, firstErr
	}
	fmt.Fprintf(out, "soak: %d changes of objects in clusters (created, updated, deleted), %d pauses of clusters holding them, %d reads after a resume found the last write\n", sum.Writes, sum.Pauses, sum.ReadsAfterPause)
	fmt.Fprintf(out, "soak: %d claims of a warm spare checked (%d without a time to hold to its expiry)\n", sum.Handouts, sum.UnverifiedHandouts)
	fmt.Fprintf(out, "soak: %d histories, %d events, %d violations\n", sum.Histories, sum.Events, sum.Violations)
	return sum, ctx.Err()
}

// one plays one seed's history (shrinking it when it fails) and returns its failure, if any, and
// the whole history's result.
func (c Config) one(ctx context.Context, seed uint64) (*Failure, Result, error) {
	events, keep := c.generate(seed), []int(nil)
	if len(c.Keep) > 0 && len(c.Seeds) == 1 {
		keep = c.Keep
		events = pickEvents(events, keep)
	}
	res, err := Run(ctx, c.Options, seed, events)
	if err != nil {
		return nil, Result{}, fmt.Errorf("soak: seed %d: %w", seed, err)
	}
	if c.Out != nil {
		fmt.Fprintf(c.Out, "seed %d: %d events in %s, %d violations; %d changes of objects, %d pauses holding them, %d reads after a resume\n", seed, res.Events, res.Duration.Round(time.Millisecond), len(res.Violations), res.Writes, res.Pauses, res.ReadsAfterPause)
		// Before the shrink, which may take long: what broke in the whole history.
		for _, v := range res.Violations {
			fmt.Fprintf(c.Out, "  seed %d: %s\n", seed, v)
		}
	}
	if len(res.Violations) == 0 {
		return nil, res, nil
	}
	f := Failure{Seed: seed, NoPool: c.NoPool, Keep: keep, Violations: res.Violations}
	if !c.NoShrink && keep == nil {
		if c.ShrinkFor <= 0 {
			c.ShrinkFor = 5 * time.Minute
		}
		sctx, cancel := context.WithTimeout(ctx, c.ShrinkFor)
		f = shrink(sctx, c, seed, res.Violations, c.Out)
		cancel()
	}
	return &f, res, nil
}

// generate is the history of seed as c plays it.
func (c Config) generate(seed uint64) []Event {
	if c.NoPool {
		return GenerateNoPool(seed, c.Events)
	}
	return Generate(seed, c.Events)
}

func pickEvents(all []Event, keep []int) []Event {
	var out []Event
	for _, k := range keep {
		if k >= 0 && k < len(all) {
			out = append(out, all[k])
		}
	}
	return out
}

// shrink is delta debugging (Zeller's ddmin) over the history's events: it keeps removing chunks
// while the rest still breaks one of the same invariants, within c.ShrinkRuns runs. A history
// whose failure depends on timing may not fail on every run; the shrunk one is the shortest seen
// to fail.
func shrink(ctx context.Context, c Config, seed uint64, first []Violation, out io.Writer) Failure {
	if out == nil {
		out = io.Discard
	}
	all := c.generate(seed)
	want := map[string]bool{}
	for _, v := range first {
		want[v.Invariant] = true
	}
	fails := func(cand []int) ([]Violation, bool) {
		res, err := Run(ctx, c.Options, seed, pickEvents(all, cand))
		if err != nil {
			return nil, false
		}
		for _, v := range res.Violations {
			if want[v.Invariant] {
				return res.Violations, true
			}
		}
		return nil, false
	}
	keep, vs := ddmin(len(all), first, c.ShrinkRuns, func(cand []int) ([]Violation, bool) {
		if ctx.Err() != nil {
			return nil, false
		}
		vs, ok := fails(cand)
		if ok {
			fmt.Fprintf(out, "  shrunk seed %d to %d events\n", seed, len(cand))
		}
		return vs, ok
	})
	return Failure{Seed: seed, NoPool: c.NoPool, Keep: keep, Violations: vs}
}

// ddmin shrinks the indices 0..n-1 to a shorter list on which fails still holds, within runs
// calls of fails: remove a chunk, keep the removal when it still fails, halve the chunks when none
// can go. first is the failure of the whole list.
func ddmin(n int, first []Violation, runs int, fails func([]int) ([]Violation, bool)) ([]int, []Violation) {
	keep := make([]int, n)
	for i := range keep {
		keep[i] = i
	}
	best := first
	parts := 2
	for len(keep) >= 2 && runs > 0 {
		chunk := (len(keep) + parts - 1) / parts
		reduced := false
		for start := 0; start < len(keep) && runs > 0; start += chunk {
			cand := append(slices.Clone(keep[:start]), keep[min(start+chunk, len(keep)):]...)
			if len(cand) == 0 {
				continue
			}
			runs--
			if vs, ok := fails(cand); ok {
				keep, best = cand, vs
				parts = max(parts-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if parts >= len(keep) {
				break
			}
			parts = min(2*parts, len(keep))
		}
	}
	return keep, best
}

func randomSeed() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:]) >> 1 // printable as a positive int64 too
}
