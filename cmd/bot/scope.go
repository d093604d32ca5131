package main

import (
	"context"
	"strings"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/statestore"
)

// repoScope is the repository a command run by a workflow acts for (GITHUB_REPOSITORY), "" when
// run by hand. One state bucket serves every repository of the Scaleway project, so a workflow
// of one repository must neither change nor read another's cluster (endpoints, resources, cost,
// kubeconfig): issue 11 hole 10.
func (a *app) repoScope() string { return strings.TrimSpace(a.getenv("GITHUB_REPOSITORY")) }

// inScope refuses the cluster of header h when it belongs to another repository than the
// workflow's (clusterops.Owned, the one rule). Clusters without a repository (an operator's) and
// runs by hand pass.
func inScope(repo string, h statestore.Header) error {
	if r := clusterops.Owned(h, clusterops.Intent{Cluster: h.Cluster, Scope: repo}); r != nil {
		return r
	}
	return nil
}

// scopedOps is clusterOps for a command that prints or probes one cluster: it reads the
// cluster's header and applies inScope before anything of the cluster is printed or probed.
func (a *app) scopedOps(ctx context.Context, name string) (ops *clusterops.Ops, close func(), err error) {
	ops, close, err = a.clusterOps(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if err := a.checkScope(ctx, ops.Store, name); err != nil {
		close()
		return nil, nil, err
	}
	return ops, close, nil
}

// scopedNodeOps is scopedOps for a command that talks to the cluster's nodes: the bot's whole
// parts (wiring.Open: the cluster's graph, the runner's address, POC_READ_RUNNER_ACCESS), so that
// a runner outside admin_cidrs is admitted by the security group for the read, as a run that
// changes the cluster is. A cluster that does not exist, or is another repository's, is said so
// from the state bucket alone, before the whole parts ask for Scaleway's key.
func (a *app) scopedNodeOps(ctx context.Context, name string) (ops *clusterops.Ops, close func(), err error) {
	sops, sclose, err := a.scopedOps(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	_, _, err = sops.Load(ctx, name)
	sclose()
	if err != nil {
		return nil, nil, err
	}
	w, err := a.openWorld(ctx)
	if err != nil {
		return nil, nil, err
	}
	return w.ops, w.Close, nil
}

// checkScope applies inScope to the cluster's header when a workflow runs the command.
func (a *app) checkScope(ctx context.Context, store *statestore.Store, name string) error {
	repo := a.repoScope()
	if repo == "" {
		return nil
	}
	doc, err := store.Get(ctx, name)
	if err != nil {
		return err
	}
	return inScope(repo, doc.Header)
}
