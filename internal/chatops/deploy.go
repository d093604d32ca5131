package chatops

import (
	"context"
	"encoding/pem"
	"errors"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/prdeploy"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// deployment records the phase of a pull request's cluster as its GitHub deployment of the
// pull request's head commit (prdeploy); issues have none.
func (r *run) deployment(ctx context.Context, phase lifecycle.Phase, url string) {
	if r.h.Deployments == nil || !r.ev.IsPR {
		return
	}
	state := prdeploy.State(phase)
	if state == "" {
		return
	}
	sha := r.ev.PR.HeadSHA
	if sha == "" {
		pull, err := r.h.GitHub.PullRequest(ctx, r.ev.Number)
		if err != nil {
			r.h.log().Warn("could not read the pull request's head commit for its deployment", "err", err)
			return
		}
		sha, r.ev.PR.HeadSHA = pull.HeadSHA, pull.HeadSHA
	}
	r.h.Deployments.Record(ctx, r.cluster, sha, state, "cluster "+r.cluster+": "+string(phase), url)
}

// retireDeployments marks a pull request's deployments inactive once its cluster is gone or
// paused (how: "torn down", "paused").
func (r *run) retireDeployments(ctx context.Context, how string) {
	if r.h.Deployments != nil && r.ev.IsPR {
		r.h.Deployments.Retire(ctx, r.cluster, "cluster "+r.cluster+" "+how)
	}
}

// edgeURL is the environment URL of a cluster's state: its edge's DNS name, else address.
func edgeURL(name string, st *provision.State) string {
	if st == nil {
		return ""
	}
	spec, edgeName := st.Spec, ""
	if spec.DNSZone != "" {
		edgeName = spec.FQDN(spec.DNSNames(name).Edge)
	}
	return prdeploy.URL(edgeName, st.Outputs[cluster.OutWorkerIP])
}

// pemDER is the DER of a PEM certificate.
func pemDER(p []byte) ([]byte, error) {
	b, _ := pem.Decode(p)
	if b == nil {
		return nil, errors.New("the cluster's CA is not PEM")
	}
	return b.Bytes, nil
}
