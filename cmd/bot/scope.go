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
	if repo := a.repoScope(); repo != "" {
		doc, err := ops.Store.Get(ctx, name)
		if err == nil {
			err = inScope(repo, doc.Header)
		}
		if err != nil {
			close()
			return nil, nil, err
		}
	}
	return ops, close, nil
}
