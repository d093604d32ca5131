// Package live runs `bot doctor --live`: the assumptions register's probes (internal/assume) on
// the user's real account, in the project and zone the bot will use. Each probe settles one row:
// it makes cheap, reversible calls (reads; a flexible IP and a DNS record made and removed;
// conditional writes and deletes of throw-away objects in the state bucket; a presigned link
// fetched; the Image Factory and the registries reached), maps what it sees to one of the row's
// readings, and the register says whether the bot handles it. A reading the bot does not handle,
// or a probe that fails, fails the doctor, naming the row and what to do.
//
// What a probe creates is the probe's, by name and tag (ProbeCluster, statestore.ProbePrefix,
// dnsProbePrefix), and is removed before Run returns; Run first sweeps what a killed run left, and
// the reaper's orphan pass deletes a leftover flexible IP after its grace (it carries a cluster
// tag and no state). Run ends with a look for anything of a probe's still there.
//
// The clients come from the caller (internal/wiring.Live builds them from the environment), so
// that a recording of the run wraps every transport.
package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Bounds of a run: the three minutes and five cents.
const (
	Deadline = 3 * time.Minute
	MaxCost  = 50_000_000 // nano-euros
)

// bounds are a run's times: the whole run, one probe's share, and what a removal gets once its
// probe's time is up. The probes share run less two cleanups (the last probe's removal and the
// final look), so that a run ends within run whatever hangs.
type bounds struct{ run, probe, cleanup time.Duration }

var defaultBounds = bounds{run: Deadline, probe: 40 * time.Second, cleanup: 20 * time.Second}

// cleanupContext is ctx for removing what a probe made: it outlives the probe's deadline or
// cancellation (the removal must still happen), within the cleanup bound.
func (c Config) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.bounds.cleanup)
}

// Config is what the probes act with.
type Config struct {
	Scaleway     *scw.Client
	Project, Org string
	Zone         scw.Zone
	Store        *statestore.Store // the state bucket (nil: its rows are not probed)
	HTTP         *http.Client      // the Image Factory and the registries
	FactoryURL   string
	Registries   []string // base URLs whose /v2/ answers (POC_REGISTRY_PROBE_URLS)
	DNSZone      string   // "" : dns-comment is not probed
	Offers       []string // the worker's offers, in order
	Spec         provision.Spec
	ETA          *eta.Book                                 // nil: em-delivery is not probed
	FirstContact *firstcontact.Book                        // nil: the rows the bot's runs settle are not reported
	GitHubToken  func(ctx context.Context) (string, error) // nil: token-format is not probed
	// GitHubRepo ("owner/name") and GitHubAPIURL ("": api.github.com) are the repository the
	// GitHub rows' reads go to with that token ("": compare-base and variable-writers are not probed).
	GitHubRepo, GitHubAPIURL string
	ID                       string // the probe's id (default: random)
	Log                      *slog.Logger
	probesForTest            []probe
	bounds                   bounds // zero: defaultBounds
}

// ProbeCluster is the cluster name a probe's Scaleway resources are tagged with: no state names
// it, so the reaper's orphan pass sweeps what a killed probe left.
func ProbeCluster(id string) string { return "doctor-probe-" + id }

// dnsProbePrefix names a probe's DNS record.
const dnsProbePrefix = "_pocbot-probe-"

// Finding is what one probe saw.
type Finding struct {
	Reading string // one of the row's readings; "" when the probe could not tell
	Detail  string // what it saw
	Skipped string // why it did not run (not a failure)
	Err     error  // the probe could not run (a failure: the row stays unsettled)
	Cost    int64  // worst case of what it spent, nano-euros
}

// Result is one row and what its probe found.
type Result struct {
	Row assume.Row
	Finding
	Took time.Duration
}

// Status of a result.
type Status int

// Statuses.
const (
	Settled   Status = iota // a reading the bot handles
	Unsettled               // skipped, or every reading is handled and none was seen
	Failed                  // a reading the bot does not handle, or the probe failed
)

// Status says how the result counts.
func (r Result) Status() Status {
	switch {
	case r.Err != nil:
		return Failed
	case r.Reading == "":
		return Unsettled
	}
	if x, ok := r.Row.Reading(r.Reading); ok && !x.Handled {
		return Failed
	}
	return Settled
}

// Report is a run.
type Report struct {
	ID      string
	Results []Result
	Swept   []string // what a killed run had left, removed first
	Left    []string // anything of a probe's still there at the end
	Took    time.Duration
}

// Cost is the worst case of what the probes spent.
func (r Report) Cost() int64 {
	var n int64
	for _, x := range r.Results {
		n += x.Cost
	}
	return n
}

// Failed names the failed rows (and "left behind" when something stayed).
func (r Report) Failed() []string {
	var out []string
	for _, x := range r.Results {
		if x.Status() == Failed {
			out = append(out, x.Row.ID)
		}
	}
	if len(r.Left) > 0 {
		out = append(out, "left behind")
	}
	return out
}

// Run sweeps what a killed run left, runs every probe (each bounded, the whole within Deadline),
// and looks for anything left.
func Run(ctx context.Context, cfg Config) Report {
	start := time.Now()
	if cfg.ID == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		cfg.ID = "x" + hex.EncodeToString(b)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 20 * time.Second}
	}
	if cfg.bounds == (bounds{}) {
		cfg.bounds = defaultBounds
	}
	rep := Report{ID: cfg.ID}
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.bounds.run-2*cfg.bounds.cleanup)
	defer cancel()
	rep.Swept = sweep(ctx, cfg)
	probes := cfg.probesForTest
	if probes == nil {
		probes = register()
	}
	for _, p := range probes {
		pctx, pcancel := context.WithTimeout(ctx, cfg.bounds.probe)
		t0 := time.Now()
		f := p.run(pctx, cfg)
		pcancel()
		rep.Results = append(rep.Results, Result{Row: assume.MustLookup(p.row), Finding: f, Took: time.Since(t0)})
	}
	lctx, lcancel := cfg.cleanupContext(outer)
	rep.Left = leftovers(lctx, cfg)
	lcancel()
	rep.Took = time.Since(start)
	return rep
}

// Render writes the report: one line per row (its reading, whether the bot handles it, what the
// probe saw, what to do), what was swept and left, the time and the cost, and what to send back.
func (r Report) Render(w io.Writer) {
	fmt.Fprintf(w, "bot doctor --live: the probes of the assumptions register (docs/assumptions.md), probe %s\n", r.ID)
	for _, x := range r.Results {
		mark, reading := "✓", x.Reading
		switch x.Status() {
		case Failed:
			mark = "✗"
		case Unsettled:
			mark = "–"
		}
		if reading == "" {
			reading = "unknown"
		}
		detail := x.Detail
		if x.Skipped != "" {
			detail = "not probed: " + x.Skipped
		}
		if x.Err != nil {
			detail = "the probe failed: " + x.Err.Error()
		}
		fmt.Fprintf(w, "%s %-20s %-10s %s\n", mark, x.Row.ID, reading, detail)
		if rd, ok := x.Row.Reading(x.Reading); ok {
			what := "handled: "
			if !rd.Handled {
				what = "NOT handled — "
			}
			fmt.Fprintf(w, "    %s%s\n", what, rd.How)
		}
		if x.Err != nil {
			fmt.Fprintf(w, "    → check the key's permissions and the endpoints, then rerun; the row stays unsettled (%s)\n", x.Row.Probe)
		}
	}
	if len(r.Swept) > 0 {
		fmt.Fprintf(w, "\nswept first, left by an earlier probe: %s\n", strings.Join(r.Swept, ", "))
	}
	if len(r.Left) > 0 {
		fmt.Fprintf(w, "\n✗ left behind: %s\n    → rerun `bot doctor --live`: it removes them first\n", strings.Join(r.Left, ", "))
	} else {
		fmt.Fprintf(w, "\nnothing left behind\n")
	}
	fmt.Fprintf(w, "%s, at most € %.3f spent\n", r.Took.Round(100*time.Millisecond), float64(r.Cost())/1e9)
	if f := r.Failed(); len(f) > 0 {
		fmt.Fprintf(w, "\n%d failed: %s\nSend this output back (it holds no secret: ids, readings and statuses only): "+
			"open an issue at https://github.com/pocbot/pocbot/issues titled \"first contact: %s\".\n",
			len(f), strings.Join(f, ", "), strings.Join(f, ", "))
	}
}
