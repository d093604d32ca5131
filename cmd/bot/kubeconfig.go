package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

func init() {
	for _, k := range []struct{ name, summary, what string }{
		{"kubeconfig", "write a cluster's admin kubeconfig (needs the state key)", "kubeconfig"},
		{"talosconfig", "write a cluster's talosconfig (needs the state key)", "talosconfig"},
	} {
		var name, out string
		register(&command{
			name:    k.name,
			summary: k.summary,
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
				if k.what == "kubeconfig" {
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
				fmt.Fprintf(a.stderr, "wrote %s of cluster %s to %s\n", k.what, name, out)
				return nil
			},
		})
	}
}
