package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"
)

func init() {
	var (
		name    string
		lk      lockFlags
		parkFor time.Duration
	)
	register(&command{
		name:    "down",
		summary: "destroy a cluster in dependency order, then sweep what still carries its tag",
		env:     envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			lk.define(e)
			e.Setting(&parkFor, "park_for")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			if err := requireCluster(name); err != nil {
				return err
			}
			w, req, err := lk.open(ctx, a, name, "down", nil)
			if err != nil {
				return err
			}
			defer w.Close()
			req.Progress = newProgressPrinter(a.stderr)
			if parkFor < 0 {
				return errors.New("down: --park-for must be ≥ 0")
			}
			req.ParkFor = parkFor
			res, err := w.ops.Down(ctx, req)
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
	})
}
