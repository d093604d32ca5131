package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/pocbot/pocbot/internal/clusterops"
)

// bot pause and bot resume are /poc pause and /poc resume for an operator or a repository's own
// workflow: the same clusterops operations, budgeted and scoped as a comment's.
func pauseCommand() *command {
	var (
		tf         teardownFlags
		releaseIPs bool
	)
	return &command{
		name: "pause",
		summary: "take a ready cluster's etcd snapshot into the state bucket, verify it, then delete its machines (as /poc pause does); " +
			"the reserved IPs, security group, DNS and secrets stay, so `bot resume` brings the same cluster back",
		env: envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			tf.define(fs, e)
			e.Bool(&releaseIPs, "release-ips", "", false, "also release the reserved IPs (a lower paused price; the resume gets new IPs, new certificates from the same CA and a new kubeconfig)")
		},
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			w, req, err := tf.open(ctx, a, "pause")
			if err != nil {
				return err
			}
			defer w.Close()
			req.ReleaseIPs = releaseIPs
			res, err := w.ops.Run(ctx, clusterops.VerbPause, req, newProgressPrinter(a.stderr))
			if err != nil {
				return fmt.Errorf("pause %s: %w", tf.name, err)
			}
			a.printf("cluster %s is %s: %s per day until `bot resume --cluster %s`\n", tf.name, res.Header.Phase, res.Quote.Daily.Format(2), tf.name)
			return nil
		},
	}
}

func resumeCommand() *command {
	var (
		rname  string
		rlk    lockFlags
		budget budgetFlags
	)
	return &command{
		name:    "resume",
		summary: "bring a paused cluster back (as /poc resume does): its machines again on the kept IPs, etcd recovered from the snapshot, ready when the network is",
		env:     envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &rname)
			rlk.define(e)
			budget.define(e)
		},
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			if err := requireCluster(rname); err != nil {
				return err
			}
			w, req, err := budget.open(ctx, a, &rlk, rname, "resume", nil)
			if err != nil {
				return err
			}
			defer w.Close()
			res, err := w.ops.Run(ctx, clusterops.VerbResume, req, newProgressPrinter(a.stderr))
			if err != nil {
				return fmt.Errorf("resume %s: %w", rname, err)
			}
			a.printUp(res)
			return nil
		},
	}
}
