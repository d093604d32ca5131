package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/wiring"
)

func statusCommand() *command {
	var (
		name   string
		health bool
	)
	return &command{
		name: "status",
		summary: "show a cluster: phase, resources with ids and addresses, age, expiry, keep label, lock holder, " +
			"cost accrued, and the health of its Talos and Kubernetes APIs (exit 1 when a check fails)",
		env: envList(envStore, envSCW, []string{"POC_RUNNER_CIDR", "POC_RUNNER_ECHO_URL"}),
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			e.Bool(&health, "health", "", true, fmt.Sprintf("check the Talos APIs (:%d) and Kubernetes /readyz (:%d), a few seconds at most", netpolicy.PortApid, netpolicy.PortKubeAPI))
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			ops, closeOps, err := a.scopedOps(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			if health {
				// A check from outside admin_cidrs fails at the security group: with the runner's
				// address the status says so, naming it, instead of a bare "cannot connect".
				ops.RunnerCIDR = wiring.DetectRunner(ctx, a.getenv, a.log)
			}
			// The Talos client logs every answer at info; next to the table that is noise (POC_DEBUG keeps it).
			if a.getenv("POC_DEBUG") == "" {
				ctx = talos.WithLogger(ctx, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			} else {
				ctx = talos.WithLogger(ctx, a.log.With("component", "talos"))
			}
			st, err := ops.Status(ctx, name, health)
			if err != nil {
				return err
			}
			a.printStatus(ctx, st, time.Now())
			var failed []string
			for _, h := range st.Health {
				if !h.OK {
					failed = append(failed, h.Name)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("cluster %s: %d of %d health checks failed (%s): see the lines marked ✗ above",
					name, len(failed), len(st.Health), strings.Join(failed, ", "))
			}
			return nil
		},
	}
}

func (a *app) printStatus(ctx context.Context, st *clusterops.Status, now time.Time) {
	h := st.Header
	a.printf("cluster %s\n", h.Cluster)
	a.printf("  phase:        %s\n", h.Phase)
	if h.Repository != "" {
		kind := h.Kind
		if kind == "" {
			kind = "issue"
		}
		a.printf("  for:          %s #%d (%s), requested by %s\n", h.Repository, h.Number, kind, h.RequestedBy)
	} else if h.RequestedBy != "" {
		a.printf("  requested by: %s\n", h.RequestedBy)
	}
	a.printf("  created:      %s (age %s)\n", h.Created.UTC().Format(time.RFC3339), roundDur(now.Sub(h.Created)))
	switch {
	case h.Expires.IsZero():
		a.printf("  expires:      never\n")
	case h.Expires.After(now):
		a.printf("  expires:      %s (in %s)\n", h.Expires.UTC().Format(time.RFC3339), roundDur(h.Expires.Sub(now)))
	default:
		a.printf("  expires:      %s (expired %s ago: the reaper will remove it)\n", h.Expires.UTC().Format(time.RFC3339), roundDur(now.Sub(h.Expires)))
	}
	meta, merr := clusterops.MetaOf(h)
	switch {
	case merr != nil:
		a.printf("  metadata:     unreadable (%v)\n", merr)
	case meta.Keep:
		a.printf("  keep label:   yes (expiry paused while the issue carries the keep label)\n")
	default:
		a.printf("  keep label:   no\n")
	}
	if !meta.DownFailed.IsZero() {
		a.printf("  down failed:  %s (the reaper retries)\n", meta.DownFailed.Format(time.RFC3339))
	}
	if l := st.Lock; l != nil {
		state := "lease until " + l.Expires.UTC().Format(time.RFC3339)
		if !l.Expires.After(now) {
			state = "lease expired " + roundDur(now.Sub(l.Expires)).String() + " ago: the next run takes it over"
		}
		a.printf("  lock:         held by %s (%s, run %s) since %s, %s; id %s\n", orDash(l.Actor), orDash(l.Command),
			orDash(l.RunID), l.Since.UTC().Format(time.RFC3339), state, l.ID)
	} else {
		a.printf("  lock:         free\n")
	}
	a.printCostLine(ctx, st, now)
	if s := st.State; s != nil {
		if v := s.Outputs[cluster.OutAPIEndpoint]; v != "" {
			a.printf("  Kubernetes:   %s\n", v)
		}
		if v := s.Outputs[cluster.OutWorkerIP]; v != "" {
			a.printf("  edge:         %s\n", v)
		}
		a.printf("\nresources (%d):\n", len(s.Resources))
		names := make([]string, 0, len(s.Resources))
		for n := range s.Resources {
			names = append(names, n)
		}
		sort.Strings(names)
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE\tKIND\tID\tZONE\tRECORDED STATUS\tADDRESS")
		for _, n := range names {
			r := s.Resources[n]
			addr := r.Attrs["address"]
			if addr == "" {
				addr = r.Attrs["ipv4"]
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", n, r.Kind, orDash(r.ID), orDash(r.Zone), orDash(r.Status), orDash(addr))
		}
		_ = tw.Flush()
	}
	if len(st.Health) > 0 {
		a.printf("\nhealth:\n")
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		for _, c := range st.Health {
			mark := "✓"
			if !c.OK {
				mark = "✗"
			}
			fmt.Fprintf(tw, "  %s %s\t%s\t%s\n", mark, c.Name, orDash(c.Target), c.Detail)
		}
		_ = tw.Flush()
		if st.Unreachable != "" {
			a.printf("  note: %s\n", st.Unreachable)
		}
	}
}

// printCostLine prices the cluster's spec. A status must still answer when the prices cannot be
// had (no Scaleway credentials, API down): the line then says why instead of failing the command.
func (a *app) printCostLine(ctx context.Context, st *clusterops.Status, now time.Time) {
	if st.State == nil {
		return
	}
	q, err := a.quoter()
	if err != nil {
		a.printf("  cost:         unknown (%v)\n", err)
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	life := time.Duration(0)
	if !st.Header.Expires.IsZero() {
		life = st.Header.Expires.Sub(now)
	}
	quote, err := clusterops.Quote(qctx, q, st.State.Spec, life, true)
	if err != nil {
		a.printf("  cost:         unknown (%v)\n", err)
		return
	}
	lower := ""
	if quote.HasUnknown() {
		lower = " (lower bound: some prices unknown)"
	}
	line := fmt.Sprintf("accrued %s since created, %s per day", quote.Accrued(st.Header.Created, now).Format(2), quote.Daily.Format(2))
	if !st.Header.Expires.IsZero() && st.Header.Expires.After(now) {
		line += fmt.Sprintf(", %s more until expiry", quote.UntilExpiry(now, st.Header.Expires).Format(2))
	}
	a.printf("  cost:         %s%s\n", line, lower)
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	default:
		return d.Round(100 * time.Millisecond)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
