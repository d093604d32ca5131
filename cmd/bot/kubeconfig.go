package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// secretFileCommand is `bot kubeconfig` or `bot talosconfig`: what is "kubeconfig" or "talosconfig",
// the secret of the cluster's state the command writes.
func secretFileCommand(what, summary string) *command {
	var name, out string
	return &command{
		name:    what,
		summary: summary,
		env:     envStore,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			fs.StringVar(&out, "o", "", "write to this file (mode 0600) instead of standard output")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			ops, closeOps, err := a.scopedOps(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			var data []byte
			if what == "kubeconfig" {
				data, err = ops.Kubeconfig(ctx, name)
			} else {
				_, state, lerr := ops.Load(ctx, name)
				err = lerr
				if err == nil {
					var ok bool
					if data, ok = state.Secrets[cluster.SecretTalosconfig]; !ok {
						err = fmt.Errorf("cluster %q has no talosconfig yet: run up until its configs are generated", name)
					}
				}
			}
			if err != nil {
				return err
			}
			if out == "" {
				_, err = a.stdout.Write(data)
				return err
			}
			if err := os.WriteFile(out, data, 0o600); err != nil {
				return fmt.Errorf("write %s: %w", out, err)
			}
			fmt.Fprintf(a.stderr, "wrote %s of cluster %s to %s\n", what, name, out)
			return nil
		},
	}
}
