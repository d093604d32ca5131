package main

import (
	"context"
	"fmt"
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
// workflow's. Clusters without a repository (an operator's) and runs by hand pass.
func inScope(repo, name string, h statestore.Header) error {
	if repo == "" || h.Repository == "" || strings.EqualFold(h.Repository, repo) {
		return nil
	}
	return fmt.Errorf("cluster %q belongs to %s, not to %s (GITHUB_REPOSITORY): run it from that repository", name, h.Repository, repo)
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
	return inScope(repo, name, doc.Header)
}
