package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/pocbot/pocbot/internal/clusterops"
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
			ops, closeOps, err := a.clusterOps(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			var data []byte
			if what == "kubeconfig" {
				var out *clusterops.Outcome
				out, err = ops.Run(ctx, clusterops.VerbKubeconfig, clusterops.Intent{Cluster: name, Scope: a.repoScope()}, nil)
				if err == nil {
					data = out.Kubeconfig
				}
			} else {
				var st *clusterops.Status
				if st, err = a.status(ctx, ops, clusterops.Intent{Cluster: name}); err == nil {
					var ok bool
					if data, ok = st.State.Secrets[cluster.SecretTalosconfig]; !ok {
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
