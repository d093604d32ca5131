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

// checkScope reads the cluster's header and applies inScope, before anything of the cluster is
// printed or probed.
func (a *app) checkScope(ctx context.Context, ops *clusterops.Ops, name string) error {
	repo := a.repoScope()
	if repo == "" {
		return nil
	}
	doc, err := ops.Store.Get(ctx, name)
	if err != nil {
		return err
	}
	return inScope(repo, doc.Header)
}
