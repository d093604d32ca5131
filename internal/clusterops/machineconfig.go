package clusterops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/settings"
)

// NodeConfig is the machine configuration one node runs.
type NodeConfig struct {
	Node string // cp-0, cp-1, …, worker
	Addr string // its Talos API, host:port
	// Route is how it is read: the control planes directly, the worker through the first
	// control plane's apid (its firewall admits the nodes, never a runner).
	Route  talos.Route
	Config []byte
	Err    error // why it could not be read (the others are still returned)
}

// MachineConfigs reads, from every node of the cluster, the machine configuration it runs (the
// active MachineConfig resource, as `talosctl get machineconfig` shows it), secrets redacted
// unless withSecrets. A node that cannot be read has its Err set; the error is for what stops
// the whole (no such cluster, no talosconfig yet).
func (o *Ops) MachineConfigs(ctx context.Context, clusterName string, withSecrets bool) ([]NodeConfig, error) {
	_, st, err := o.Load(ctx, clusterName)
	if err != nil {
		return nil, err
	}
	tc, ok := st.Secrets[cluster.SecretTalosconfig]
	if !ok || len(tc) == 0 {
		return nil, fmt.Errorf("cluster %q has no talosconfig yet: run up until its configs are generated", clusterName)
	}
	var out []NodeConfig
	cps := controlPlaneIPs(st)
	for i, ip := range cps {
		addr := net.JoinHostPort(ip, strconv.Itoa(talosPort))
		out = append(out, NodeConfig{Node: fmt.Sprintf("cp-%d", i), Addr: addr, Route: talos.Direct(addr)})
	}
	if ip := st.Outputs[cluster.OutWorkerIP]; ip != "" && len(cps) > 0 {
		out = append(out, NodeConfig{Node: "worker", Addr: net.JoinHostPort(ip, strconv.Itoa(talosPort)), Route: workerRoute(cps, ip)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster %q has no node address in its state yet: run up", clusterName)
	}
	readAll := func(ctx context.Context) error {
		for i := range out {
			cctx, cancel := context.WithTimeout(ctx, healthCheckBudget)
			out[i].Config, out[i].Err = talos.MachineConfigAt(cctx, out[i].Route, tc, withSecrets)
			cancel()
		}
		return nil
	}
	// From a runner outside admin_cidrs the nodes are reached through the security group opened
	// to it for the read, as a run that changes the cluster opens it; or, when the operator said
	// not to, nothing is dialled.
	switch decideReadAccess(st, o.RunnerCIDR, o.NoReadRunnerAccess) {
	case readRefused:
		return nil, fmt.Errorf("machine configs of %q: %w and %s is false (reads do not open the security group): %s",
			clusterName, ErrRunnerOutside, settings.Lookup("read-runner-access").Env, outsideAdminCIDRs(st, o.RunnerCIDR))
	case readOpen:
		opened, err := o.withRunnerAccess(ctx, clusterName, "machineconfig", readAll)
		if !opened && err != nil {
			if out[0].Config == nil && out[0].Err == nil {
				return nil, err // nothing was read
			}
			for i := range out {
				if out[i].Err != nil {
					out[i].Err = errors.Join(out[i].Err, err)
				}
			}
		}
		return out, nil
	}
	return out, readAll(ctx)
}
