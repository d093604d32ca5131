package clusterops

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Health is one check of a running cluster: what was checked, at which address, and what it said.
type Health struct {
	Name   string // e.g. "talos-api cp-0", "kubernetes-api"
	Target string // host:port or URL that was dialled
	OK     bool
	Detail string // "ready", or what failed, in words a person can act on

	guarded bool // the target is behind the cluster's security group (healthTarget.guarded)
}

// Status is what is known of one cluster: its public header, its decrypted state, who holds its
// lock (nil when free) and, when asked, the health of its APIs.
type Status struct {
	Header statestore.Header
	State  *provision.State
	Lock   *statestore.LockInfo
	Health []Health
	// Unreachable says why the checks of the control planes failed when the security group is
	// the likely reason (this runner is outside the cluster's admin CIDRs), and what to do; "" else.
	Unreachable string
}

// Health check bounds. A status is asked by a person (or a comment) waiting for an answer: a dead
// node must cost seconds, not the minutes the provisioning waits allow. The dial is separate so
// that a closed port answers at once instead of after the whole check budget.
const (
	healthDialTimeout = 2 * time.Second
	healthCheckBudget = 6 * time.Second
	// networkCheckBudget bounds the readiness checks together: the pod-network probe starts a
	// pod on every node and waits for them (a few seconds when the network works, 5 s more
	// when a target does not answer).
	networkCheckBudget = 15 * time.Second
)

// Ports checked; the seed's cluster uses the standard ones (cluster.Config defaults).
const (
	talosPort = netpolicy.PortApid
	kubePort  = netpolicy.PortKubeAPI
)

// Status reads a cluster's document and lock holder and, when checkHealth is set, checks in
// parallel with short deadlines the Talos API of every control plane and of the worker (mutual
// TLS with the talosconfig from state) and the Kubernetes API's /readyz (with the kubeconfig from
// state, dialling the first control plane so that a DNS name not yet resolvable does not matter).
// A failed check is a Health entry with OK false, not an error: the error is for what stops the
// status itself (no such cluster, wrong key, unreachable store). It is Run of VerbStatus for an
// operator (no owner, no witness).
func (o *Ops) Status(ctx context.Context, clusterName string, checkHealth bool) (*Status, error) {
	out, err := o.Run(ctx, VerbStatus, Intent{Cluster: clusterName, Health: checkHealth}, nil)
	if err != nil {
		return nil, err
	}
	if !out.Exists {
		return nil, fmt.Errorf("cluster %q: %w (see `bot state ls`)", clusterName, ErrNoCluster)
	}
	return out.Status, nil
}

// status is what a status found, its APIs checked when health is set (a paused cluster has no
// node to check). From a runner outside admin_cidrs the checks need the security group opened to
// it for their run, as a run that changes the cluster opens it (or, when the operator said not
// to, they fail at once, naming admin_cidrs).
func (o *Ops) status(ctx context.Context, f Facts, health bool) (*Status, error) {
	if o.Log != nil {
		ctx = talos.WithDefaultLogger(ctx, o.Log.With("component", "talos"))
	}
	st := f.State
	s := &Status{Header: f.Doc.Header, State: st, Lock: f.Lock}
	if !health {
		return s, nil
	}
	hint := outsideAdminCIDRs(st, o.RunnerCIDR)
	var notOpened error
	switch decideReadAccess(st, o.RunnerCIDR, o.NoReadRunnerAccess) {
	case readRefused:
		s.Health = []Health{{Name: "talos-api", Target: strings.Join(controlPlaneIPs(st), ", "), guarded: true,
			Detail: "not checked: " + ErrRunnerOutside.Error() + " and " + settings.Lookup("read-runner-access").Env + " is false (reads do not open the security group)"}}
		s.Unreachable = hint
		return s, nil
	case readOpen:
		var opened bool
		opened, notOpened = o.withRunnerAccess(ctx, f.Doc.Header.Cluster, "status", func(ctx context.Context) error {
			s.Health = checkHealthOf(ctx, st)
			return nil
		})
		if opened {
			return s, nil
		}
		if s.Health == nil {
			return s, notOpened
		}
	default:
		s.Health = checkHealthOf(ctx, st)
	}
	if hint != "" && slices.ContainsFunc(s.Health, func(h Health) bool { return !h.OK && h.guarded }) {
		s.Unreachable = hint
		if notOpened != nil {
			s.Unreachable += " (" + notOpened.Error() + ")"
		}
	}
	return s, nil
}

// outsideAdminCIDRs says why a check from the runner at runnerCIDR cannot reach the control planes,
// or "" when it can: the security group admits the cluster's admin CIDRs only, plus the runner's
// temporary rule while a run holds it (scaleway.OutAdminTemporary). An unknown runner or a CIDR
// that does not parse says nothing rather than guess.
func outsideAdminCIDRs(st *provision.State, runnerCIDR string) string {
	if runnerCIDR == "" || st == nil {
		return ""
	}
	covered, err := cluster.Covered(scaleway.AdmittedCIDRs(st.Spec, st.Outputs[scaleway.OutAdminTemporary]), runnerCIDR)
	if err != nil || covered {
		return ""
	}
	return fmt.Sprintf("this runner (%s) is outside the cluster's admin_cidrs (%s), and the security group lets only those reach the control planes' APIs: check from an address in admin_cidrs (talosctl, kubectl), or add the runner's range to admin_cidrs with /poc up --admin-cidr",
		runnerCIDR, strings.Join(st.Spec.AdminCIDRs, ", "))
}

// healthTarget is one check to run.
type healthTarget struct {
	name, addr string
	// dial is where the check connects first ("" = addr): the control plane that forwards a
	// check of the worker.
	dial  string
	check func(ctx context.Context) error
	// guarded: behind the security group: the control planes' Talos and Kubernetes APIs, and
	// the worker's Talos API, which the bot reaches through the first control plane's apid (its
	// own firewall admits the nodes and the admin CIDRs, never a runner: docs/architecture.md,
	// "The runner").
	guarded bool
}

// workerRoute is how the bot reaches the configured worker's Talos API: through the first
// control plane's apid (talos.Through), the worker's firewall admitting the nodes, not the runner.
func workerRoute(cps []string, workerIP string) talos.Route {
	return talos.Through(net.JoinHostPort(cps[0], strconv.Itoa(talosPort)), workerIP)
}

func checkHealthOf(ctx context.Context, st *provision.State) []Health {
	cps := controlPlaneIPs(st)
	if len(cps) == 0 {
		return []Health{{Name: "talos-api", OK: false,
			Detail: "no control-plane address in state yet: the cluster's IPs were not reserved; run up"}}
	}
	talosconfig := st.Secrets[cluster.SecretTalosconfig]
	var targets []healthTarget
	talosCheck := func(addr string, route talos.Route) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if len(talosconfig) == 0 {
				// Before the configs exist only the transport can be checked.
				return tlsHandshake(ctx, addr)
			}
			return talos.WaitTrustedAt(ctx, route, talosconfig)
		}
	}
	for i, ip := range cps {
		addr := net.JoinHostPort(ip, strconv.Itoa(talosPort))
		targets = append(targets, healthTarget{name: fmt.Sprintf("talos-api cp-%d", i), addr: addr, check: talosCheck(addr, talos.Direct(addr)), guarded: true})
	}
	if ip := st.Outputs[cluster.OutWorkerIP]; ip != "" {
		addr := net.JoinHostPort(ip, strconv.Itoa(talosPort))
		t := healthTarget{name: "talos-api worker", addr: addr, check: talosCheck(addr, talos.Direct(addr))}
		if len(talosconfig) > 0 {
			// Configured, it admits the nodes, not the runner: asked through a control plane.
			route := workerRoute(cps, ip)
			t.dial, t.guarded, t.check = route.Endpoint, true, talosCheck(addr, route)
		}
		targets = append(targets, t)
	}
	kubeDial := net.JoinHostPort(cps[0], strconv.Itoa(kubePort))
	kc := st.Secrets[cluster.SecretKubeconfig]
	endpoint := st.Outputs[cluster.OutAPIEndpoint]
	if endpoint == "" {
		endpoint = "https://" + kubeDial
	}
	var kubeMissing *Health
	if len(kc) == 0 {
		kubeMissing = &Health{Name: "kubernetes-api", Target: endpoint,
			Detail: "no kubeconfig in state yet: up has not reached its kubeconfig step; run up"}
	} else {
		targets = append(targets, healthTarget{name: "kubernetes-api", addr: endpoint, guarded: true, check: func(ctx context.Context) error {
			return talos.ReadyzVia(ctx, kc, kubeDial)
		}})
	}

	out := make([]Health, len(targets))
	var network []Health
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = runCheck(ctx, t, kubeDial)
		}()
	}
	if len(kc) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			network = networkHealth(ctx, kc, kubeDial, endpoint, st.Spec.CPCount+1)
		}()
	}
	wg.Wait()
	if kubeMissing != nil {
		out = append(out, *kubeMissing)
	}
	return append(out, network...)
}

// networkHealth is the cluster's readiness checks (talos.CheckReady: nodes, cilium, cluster-dns,
// routing), the same that up waits for, each a Health entry with what explains a failure and
// what to try.
func networkHealth(ctx context.Context, kc []byte, kubeDial, endpoint string, nodes int) []Health {
	cctx, cancel := context.WithTimeout(ctx, networkCheckBudget)
	defer cancel()
	var out []Health
	for _, c := range talos.CheckReady(cctx, talos.ReadyInput{Kubeconfig: kc, DialAddr: kubeDial, Nodes: nodes}) {
		d := c.Detail
		if len(c.Explain) > 0 {
			d += " (" + strings.Join(c.Explain, "; ") + ")"
		}
		if c.Try != "" && !c.OK {
			d += "; try: " + c.Try
		}
		out = append(out, Health{Name: c.Name, Target: endpoint, OK: c.OK, Detail: d, guarded: true})
	}
	return out
}

// runCheck dials first (a refused or silent port fails in healthDialTimeout), then runs the
// protocol check within healthCheckBudget.
func runCheck(ctx context.Context, t healthTarget, kubeDial string) Health {
	h := Health{Name: t.name, Target: t.addr, guarded: t.guarded}
	dial := cmp.Or(t.dial, t.addr)
	if strings.HasPrefix(dial, "https://") {
		dial = kubeDial
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, healthDialTimeout)
	conn, err := talos.Dialer(ctx).DialContext(dctx, "tcp", dial)
	cancel()
	if err != nil {
		h.Detail = fmt.Sprintf("cannot connect to %s: %v", dial, err)
		return h
	}
	_ = conn.Close()
	cctx, cancel := context.WithTimeout(ctx, healthCheckBudget)
	defer cancel()
	if err := t.check(cctx); err != nil {
		h.Detail = err.Error()
		return h
	}
	h.OK = true
	h.Detail = "ready in " + time.Since(start).Round(time.Millisecond).String()
	return h
}

// tlsHandshake checks that something speaks TLS on addr. The certificate is not verified: without
// the talosconfig there is nothing to verify it against, and this only tells "a Talos API listens".
func tlsHandshake(ctx context.Context, addr string) error {
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // reachability only
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return c.Close()
}

// controlPlaneIPs are the control planes' public addresses, from the up's output when it got that
// far, else from the reserved IP records (an up that stopped early still shows what it reserved).
func controlPlaneIPs(st *provision.State) []string {
	if v := st.Outputs[cluster.OutTalosNodes]; v != "" {
		var out []string
		for _, ip := range strings.Split(v, ",") {
			if ip = strings.TrimSpace(ip); ip != "" {
				out = append(out, ip)
			}
		}
		return out
	}
	var out []string
	for i := range st.Spec.CPCount {
		if rec := st.Resources[scaleway.NodeIP(i)]; rec != nil {
			if a := rec.Attrs["address"]; a != "" {
				out = append(out, a)
			}
		}
	}
	return out
}
