package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/provision/talos"
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
		env: envList(envWorld, []string{"POC_RUNNER_CIDR", "POC_RUNNER_ECHO_URL", "POC_READ_RUNNER_ACCESS"}),
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			e.Bool(&health, "health", "", true, fmt.Sprintf("check the Talos APIs (:%d) and Kubernetes /readyz (:%d), a few seconds at most", netpolicy.PortApid, netpolicy.PortKubeAPI))
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			// The checks talk to the nodes: from outside admin_cidrs the security group admits
			// this runner for them (the whole bot's parts, the runner's address detected).
			open := a.scopedOps
			if health {
				open = a.scopedNodeOps
			}
			ops, closeOps, err := open(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			// The Talos client logs every answer at info; next to the table that is noise (POC_DEBUG keeps it).
			if !a.env().Given("debug") {
				ctx = talos.WithLogger(ctx, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			} else {
				ctx = talos.WithLogger(ctx, a.log.With("component", "talos"))
			}
			st, err := a.status(ctx, ops, clusterops.Intent{Cluster: name, Health: health})
			if err != nil {
				return err
			}
			q, qerr := a.quoter()
			v := clusterops.StatusView(ctx, st, q, time.Now())
			if qerr != nil && st.State != nil {
				v.CostNote = qerr.Error() // the status still answers without prices
			}
			if err := commands.WriteStatusText(a.stdout, v); err != nil {
				return err
			}
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

// status is what a cluster's status found (one read of its document), confined to the
// workflow's repository (clusterops.Owned, which Decide applies).
func (a *app) status(ctx context.Context, ops *clusterops.Ops, in clusterops.Intent) (*clusterops.Status, error) {
	in.Scope = a.repoScope()
	out, err := ops.Run(ctx, clusterops.VerbStatus, in, nil)
	if err != nil {
		return nil, err
	}
	if !out.Exists {
		return nil, fmt.Errorf("cluster %q: %w (see `bot state ls`)", in.Cluster, clusterops.ErrNoCluster)
	}
	return out.Status, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
