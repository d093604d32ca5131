package prdeploy

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
)

func TestState(t *testing.T) {
	for p, want := range map[lifecycle.Phase]string{
		lifecycle.PhaseProvisioning: InProgress, lifecycle.PhaseResuming: InProgress, lifecycle.PhaseReady: Success,
		lifecycle.PhaseFailed: Failure, lifecycle.PhaseDestroyed: Inactive, lifecycle.PhasePaused: Inactive,
		lifecycle.PhaseRefused: "", lifecycle.PhasePlanned: "", lifecycle.PhaseCancelled: "",
	} {
		if got := State(p); got != want {
			t.Errorf("State(%s) = %q, want %q", p, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ name, addr, want string }{
		{"edge.acme-shop-7.example.com", "192.0.2.9", "http://edge.acme-shop-7.example.com"},
		{"", "192.0.2.9", "http://192.0.2.9"},
		{"", "2001:db8::9", "http://[2001:db8::9]"},
		{"", "", ""},
	} {
		if got := URL(tc.name, tc.addr); got != tc.want {
			t.Errorf("URL(%q, %q) = %q, want %q", tc.name, tc.addr, got, tc.want)
		}
	}
}

func TestPlanAndRetirable(t *testing.T) {
	existing := []github.Deployment{{ID: 3, SHA: "bbb", State: Success}, {ID: 1, SHA: "aaa", State: Failure}, {ID: 2, SHA: "aaa", State: Inactive}}
	if id, create := Plan(existing, "aaa"); create || id != 2 {
		t.Errorf("Plan(aaa) = %d, %v; want the newest deployment of aaa (2)", id, create)
	}
	if _, create := Plan(existing, "ccc"); !create {
		t.Error("Plan(ccc): a new commit reuses another commit's deployment")
	}
	if got := Retirable(existing); !slices.Equal(got, []int64{3, 1}) {
		t.Errorf("Retirable = %v, want [3 1]", got)
	}
	if got := Superseded(existing, 3); !slices.Equal(got, []int64{1}) {
		t.Errorf("Superseded(3) = %v, want [1]: the live one stays, an inactive one is left", got)
	}
}

type fakeAPI struct {
	deps     []github.Deployment
	statuses map[int64][]github.DeploymentStatus
	err      error
}

func (f *fakeAPI) CreateDeployment(_ context.Context, sha, env, _ string) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	id := int64(len(f.deps) + 1)
	f.deps = append([]github.Deployment{{ID: id, SHA: sha, Environment: env}}, f.deps...)
	return id, nil
}

func (f *fakeAPI) CreateDeploymentStatus(_ context.Context, id int64, st github.DeploymentStatus) error {
	if f.err != nil {
		return f.err
	}
	f.statuses[id] = append(f.statuses[id], st)
	for i := range f.deps {
		if f.deps[i].ID == id {
			f.deps[i].State = st.State
		}
	}
	return nil
}

func (f *fakeAPI) Deployments(context.Context, string) ([]github.Deployment, error) {
	return slices.Clone(f.deps), f.err
}

// An up's life on one commit, a push, and the teardown: one deployment per commit, the URL on
// success only, every deployment inactive at the end; a failing API is only logged.
func TestRecorder(t *testing.T) {
	api := &fakeAPI{statuses: map[int64][]github.DeploymentStatus{}}
	r := &Recorder{API: api, LogURL: "https://github.com/acme/shop/actions/runs/9"}
	ctx := t.Context()
	r.Record(ctx, "acme-shop-7", "aaa", InProgress, "creating", "http://x")
	r.Record(ctx, "acme-shop-7", "aaa", Success, "ready", "http://192.0.2.9")
	r.Record(ctx, "acme-shop-7", "bbb", Success, "ready", "http://192.0.2.9")
	if len(api.deps) != 2 || api.deps[0].Environment != "poc-acme-shop-7" {
		t.Fatalf("deployments %+v, want one per commit in poc-acme-shop-7", api.deps)
	}
	if st := api.statuses[1]; len(st) != 3 || st[0].EnvironmentURL != "" || st[1].EnvironmentURL != "http://192.0.2.9" || st[1].LogURL != r.LogURL {
		t.Errorf("statuses of the first deployment: %+v", st)
	}
	if st := api.statuses[1]; st[len(st)-1].State != Inactive || st[len(st)-1].Description != "superseded by bbb" {
		t.Errorf("the first commit's deployment after the push's succeeded: %+v", st[len(st)-1])
	}
	if st := api.statuses[2]; len(st) != 1 || st[0].State != Success {
		t.Errorf("the push's deployment: %+v", st)
	}
	r.Retire(ctx, "acme-shop-7", "the cluster is gone")
	for _, d := range api.deps {
		if d.State != Inactive {
			t.Errorf("deployment %d is %s after the teardown", d.ID, d.State)
		}
	}
	api.err = errors.New("boom")
	r.Record(ctx, "acme-shop-7", "ccc", Success, "ready", "") // logged, not fatal
	var nilRec *Recorder
	nilRec.Record(ctx, "acme-shop-7", "ccc", Success, "", "")
}
