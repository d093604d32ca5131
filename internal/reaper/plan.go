package reaper

import (
	"slices"
	"sort"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Policy is what a plan decides by: the repository's keep label and warning lead, and whose
// issues the run may comment on.
type Policy struct {
	KeepLabel  string
	WarnBefore time.Duration
	// Repository is the repository the run's GitHub client acts on; Comment says there is one.
	Repository string
	Comment    bool
}

// IssueState is what GitHub said of a cluster's issue or pull request, looked up before planning.
// Err set: the look-up failed (expiry still applies; the recorded keep label stands in).
type IssueState struct {
	Open, IsPR, Merged bool
	Labels             []string
	Err                error
	// KeepRefused: the keep label is on the issue but does not count (clusterops.KeepVouched).
	KeepRefused *commands.KeepRefusal
}

// Step is one planned action on one cluster: its report line as planned, and the effects Execute
// carries out — record the keep label (SyncKeep), post the one expiry warning (Warn), tear down.
type Step struct {
	Decision Decision
	Header   statestore.Header
	Issue    *IssueState
	Teardown bool
	Warn     bool
	SyncKeep *bool
}

// Plan decides, from the headers and their issues alone, what the schedule does with each
// cluster at now; it does no I/O. Clusters not due come first, in the headers' order; then the
// teardowns, closed before expired, the longest overdue first: what a run's bound leaves for the
// next run is what matters least.
func Plan(headers []statestore.Header, issues map[string]*IssueState, now time.Time, p Policy) []Step {
	var steps, due []Step
	for _, h := range headers {
		s := plan1(h, issues[h.Cluster], now, p)
		if s.Teardown {
			due = append(due, s)
		} else {
			steps = append(steps, s)
		}
	}
	sort.SliceStable(due, func(i, j int) bool {
		ci, cj := due[i].Decision.Reason != commands.ReapExpired, due[j].Decision.Reason != commands.ReapExpired
		if ci != cj {
			return ci
		}
		return due[i].Decision.Expires.Before(due[j].Decision.Expires)
	})
	return append(steps, due...)
}

// plan1 is the whole policy for one cluster.
func plan1(h statestore.Header, in *IssueState, now time.Time, p Policy) Step {
	s := Step{Header: h, Issue: in}
	d := &s.Decision
	*d = Decision{Cluster: h.Cluster, Repository: h.Repository, Number: h.Number, Kind: h.Kind, Phase: h.Phase, Expires: h.Expires}
	meta, err := clusterops.MetaOf(h)
	if err != nil {
		// Decided as if nothing were recorded: a keep that cannot be read spares nothing.
		d.Err = err
	}
	kept := meta.Keep
	known := in != nil && in.Err == nil
	if in != nil && in.Err != nil {
		d.Err = in.Err
	}
	if known {
		switch {
		case !in.Open && in.Merged:
			d.Reason, s.Teardown = commands.ReapMerged, true
			return s
		case !in.Open:
			d.Reason, s.Teardown = commands.ReapClosed, true
			return s
		}
		kept = slices.Contains(in.Labels, p.KeepLabel) && in.KeepRefused == nil
		if kept != meta.Keep {
			s.SyncKeep = &kept
		}
	}
	expired := !h.Expires.IsZero() && !now.Before(h.Expires)
	// A paused cluster expires at its own bound (max_paused), keep label or not: the label keeps
	// a running cluster, not a snapshot forever.
	pausedKept := kept && lifecycle.Phase(h.Phase) == lifecycle.PhasePaused
	switch {
	case kept && !pausedKept:
		d.Action, d.Detail = ActionKept, "label "+p.KeepLabel
		if !known {
			d.Detail += " (as last seen)"
		}
		if expired {
			d.Detail += "; expired " + commands.FormatDuration(now.Sub(h.Expires)) + " ago"
		}
		return s
	case expired && spare.Is(h) && now.Before(h.Expires.Add(spare.ReapGrace)):
		// The pool pass replaces a stale spare, the new one built first; the reaper takes over
		// once the grace is over (the pass stopped running).
		d.Action = ActionNone
		d.Detail = "stale spare, left to the pool pass until " + h.Expires.Add(spare.ReapGrace).UTC().Format(time.RFC3339) + "; destroyed then"
		return s
	case expired:
		d.Reason, s.Teardown = commands.ReapExpired, true
		return s
	}
	d.Action = ActionNone
	if h.Expires.IsZero() {
		d.Detail = "no expiry"
	} else {
		d.Detail = "expires in " + commands.FormatDuration(h.Expires.Sub(now))
	}
	if ph := lifecycle.Phase(h.Phase); !meta.DownFailed.IsZero() && (ph == lifecycle.PhaseFailed || ph == lifecycle.PhaseDestroying) {
		// A user's down that failed: reported every run, destroyed by the reaper at its expiry.
		d.Action = ActionDownFailed
		d.Detail = "a teardown failed at " + meta.DownFailed.Format(time.RFC3339) + "; `/poc down` retries, the reaper does at expiry; " + d.Detail
	}
	if in != nil && in.KeepRefused != nil {
		d.Detail += "; label " + p.KeepLabel + " ignored: " + in.KeepRefused.String()
	}
	if pausedKept {
		d.Detail += "; label " + p.KeepLabel + " does not keep a paused cluster past max_paused"
	}
	canComment := p.Comment && h.Number > 0 && known && h.Repository == p.Repository
	s.Warn = err == nil && p.WarnBefore > 0 && !h.Expires.IsZero() && canComment &&
		h.Expires.Sub(now) <= p.WarnBefore && !clusterops.WarnedFor(meta, h.Expires)
	return s
}
