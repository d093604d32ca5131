package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
)

func downCommand() *command {
	var tf teardownFlags
	return &command{
		name:     "down",
		summary:  "destroy a cluster in dependency order, then sweep what still carries its tag",
		env:      envWorld,
		setFlags: tf.define,
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			w, req, err := tf.open(ctx, a, "down")
			if err != nil {
				return err
			}
			defer w.Close()
			name := tf.name
			res, err := w.ops.Run(ctx, clusterops.VerbDown, req, newProgressPrinter(a.stderr))
			if res != nil && res.Report != nil {
				for _, d := range res.Report.Deleted {
					how := "deleted"
					if d.Swept {
						how = "swept"
					}
					a.printf("%-8s %-26s %s %s\n", how, d.Kind, d.ID, d.Name)
				}
				a.printf("cluster %s: %d resources removed in %s\n", name, len(res.Report.Deleted), res.Report.Elapsed.Round(1e7))
			}
			if err != nil {
				return fmt.Errorf("down %s: %w", name, err)
			}
			return nil
		},
	}
}

// teardownFlags are the flags of the verbs that take a cluster's machines away (down, pause):
// the cluster, its lock, and how long its worker may park instead of being deleted.
type teardownFlags struct {
	name    string
	lk      lockFlags
	parkFor time.Duration
}

func (f *teardownFlags) define(fs *flag.FlagSet, e *envFlags) {
	clusterFlag(fs, e, &f.name)
	f.lk.define(e)
	e.Setting(&f.parkFor, "park_for")
}

// open checks the flags, then opens verb's world and the operator's intent.
func (f *teardownFlags) open(ctx context.Context, a *app, verb string) (*opsWorld, clusterops.Intent, error) {
	if err := requireCluster(f.name); err != nil {
		return nil, clusterops.Intent{}, err
	}
	if f.parkFor < 0 {
		return nil, clusterops.Intent{}, fmt.Errorf("%s: --park-for must be ≥ 0", verb)
	}
	w, req, err := f.lk.open(ctx, a, f.name, verb, nil)
	if err != nil {
		return nil, req, err
	}
	req.ParkFor = f.parkFor
	return w, req, nil
}
