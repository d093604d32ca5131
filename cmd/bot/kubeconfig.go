package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/kubecert"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// secretFileCommand is `bot kubeconfig` or `bot talosconfig`: what is "kubeconfig" or "talosconfig",
// the secret of the cluster's state the command writes.
func secretFileCommand(what, summary string) *command {
	var name, out string
	var expires time.Duration
	return &command{
		name:    what,
		summary: summary,
		env:     envStore,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			fs.StringVar(&out, "o", "", "write to this file (mode 0600) instead of standard output")
			if what == "kubeconfig" {
				e.Setting(&expires, "kubeconfig-expires")
			}
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			ops, closeOps, err := a.clusterOps(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			var data []byte
			switch {
			case what == "kubeconfig" && expires != 0:
				data, err = a.shortKubeconfig(ctx, ops, name, expires)
			case what == "kubeconfig":
				var out *clusterops.Outcome
				out, err = ops.Run(ctx, clusterops.VerbKubeconfig, clusterops.Intent{Cluster: name, Scope: a.repoScope()}, nil)
				if err == nil {
					data = out.Kubeconfig
				}
			default:
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

// shortKubeconfig is `bot kubeconfig --expires D`: a kubeconfig of its own key (made here, never
// stored) whose certificate the cluster's CA signs for D (never past the cluster's expiry), for
// an operator who should not hold the admin kubeconfig for longer than a task.
func (a *app) shortKubeconfig(ctx context.Context, ops *clusterops.Ops, name string, expires time.Duration) ([]byte, error) {
	key, err := kubecert.NewKey()
	if err != nil {
		return nil, err
	}
	who := cmpOr(strings.TrimSpace(a.getenv("USER")), "operator")
	sub := kubecert.Subject{User: "pocbot:operator:" + who, Groups: []string{kubecert.AdminGroup}}
	st, err := a.status(ctx, ops, clusterops.Intent{Cluster: name}) // one read, within the workflow's repository
	if err != nil {
		return nil, err
	}
	cc, err := ops.ClientCertificate(ctx, st, &key.PublicKey, sub, kubecert.Lifetime{Default: expires}, expires, a.clock())
	if err != nil {
		return nil, err
	}
	cc.Cluster.Context = name + "-" + who
	kc, err := kubecert.Kubeconfig(cc.Cluster, cc.DER, key)
	if err != nil {
		return nil, err
	}
	note := ""
	if cc.Clipped {
		note = " (cut to the cluster's expiry)"
	}
	fmt.Fprintf(a.stderr, "client certificate %s for cluster %s, valid until %s%s\n", sub.User, name, cc.NotAfter.UTC().Format(time.RFC3339), note)
	return kc, nil
}
