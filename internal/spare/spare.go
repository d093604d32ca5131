// Package spare owns the warm pool's decisions. A spare is a whole cluster built and verified as
// "ready means ready" defines it (cluster-ready: every node Ready, the network plugin up, the pod
// network probed) ahead of any request and bound to no issue; it lives in a state document of its
// own, whose header's kind is Kind and whose repository is the one that built it. `/poc up` (a pull
// request's cluster, `bot up`) claims one instead of building, and the claimed spare becomes the
// issue's cluster.
//
// This package decides, without I/O:
//   - a spare's public record (Record: the header and its labels, the one codec of them);
//   - which spare a claim takes, and why each other one is not (Choose);
//   - what the schedule does with a repository's pool (Plan): keep pool.size spares inside
//     pool.hours, starting early enough that a window's first claim is warm; outside them keep
//     what makes a claim cheapest within pool.off_hours; replace spares that are stale, of
//     another pinned version, or unhealthy, building the new before destroying the old while the
//     quotas leave room;
//   - what a claim must change on a spare to make it an issue's cluster (Rebinding).
//
// internal/clusterops reads the facts these functions decide on and carries out their decisions.
package spare

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Kind is the header kind of a spare's state document (an issue's is "issue", a pull request's
// "pull").
const Kind = "spare"

// Is tells whether h is a spare's header.
// ClaimedFrom is the spare a cluster's header says it was made of ("": it was built cold).
func ClaimedFrom(h statestore.Header) string { return h.Labels[LabelClaimedFrom] }

func Is(h statestore.Header) bool { return h.Kind == Kind }

// namePrefix starts every spare's name.
const namePrefix = "spare-"

// NewName is a fresh spare name: "spare-" and eight random letters. An issue's cluster name
// always ends with its number (commands.ClusterName), a spare's with a letter, so the two never
// meet.
func NewName() string {
	const letters = "abcdefghijkmnopqrstuvwxyz" // no l: it reads as a 1
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic("spare: crypto/rand: " + err.Error()) // never on a supported platform
	}
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return namePrefix + string(b)
}

// Record is a spare's public record: what its header says and its labels add. Everything a
// claim's choice and the schedule's plan decide on is here, so that they read the headers alone
// (statestore.List authenticates them); the spec it was built with is in its encrypted state.
type Record struct {
	Name       string
	Repository string
	Phase      lifecycle.Phase // provisioning (building), ready, failed, destroying
	// Created is when its build started; Ready when it was built and verified (zero while
	// building); Stale when it may no longer be handed out (Ready + pool.max_age, the header's
	// expiry).
	Created, Ready, Stale time.Time
	// Checked is the last health check (Ready at first); Unhealthy why it failed ("": it passed).
	Checked   time.Time
	Unhealthy string
	// Talos and Kubernetes are the versions it runs.
	Talos, Kubernetes string
	// Shared: its repository offers it to the bucket's other sharing repositories (pool.share).
	Shared bool
	// ClaimedBy is the cluster a claim is making of it, since ClaimedAt.
	ClaimedBy string
	ClaimedAt time.Time
	// DailyNanos is what it costs per day (nano-euros; 0: not recorded).
	DailyNanos int64
}

// Labels a spare's header carries, beyond clusterops' Meta (the daily cost is Meta's).
const (
	labelReady      = "spare_ready"
	labelChecked    = "spare_checked"
	labelUnhealthy  = "spare_unhealthy"
	labelTalos      = "spare_talos"
	labelKubernetes = "spare_kubernetes"
	labelShared     = "spare_shared"
	labelClaimedBy  = "spare_claimed_by"
	labelClaimedAt  = "spare_claimed_at"
	// LabelClaimedFrom is on the header of a cluster a claim made from a spare: the spare's name.
	LabelClaimedFrom = "claimed_from"
	labelDailyCost   = "daily_cost_nanos" // clusterops.Meta's; read here, written there
)

// maxUnhealthy bounds the reason kept in the header (headers are small, and public).
const maxUnhealthy = 300

// Of decodes a spare's record from its header. A label that is present but malformed is an
// error naming it: a caller deciding on the record treats the spare as unhealthy.
func Of(h statestore.Header) (Record, error) {
	r := Record{Name: h.Cluster, Repository: h.Repository, Phase: lifecycle.Phase(h.Phase), Created: h.Created, Stale: h.Expires,
		Unhealthy: h.Labels[labelUnhealthy], Talos: h.Labels[labelTalos], Kubernetes: h.Labels[labelKubernetes],
		ClaimedBy: h.Labels[labelClaimedBy], Shared: h.Labels[labelShared] == "true"}
	for _, f := range []struct {
		label string
		into  *time.Time
	}{{labelReady, &r.Ready}, {labelChecked, &r.Checked}, {labelClaimedAt, &r.ClaimedAt}} {
		if v, ok := h.Labels[f.label]; ok {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return r, fmt.Errorf("header of spare %q: label %s=%q: %w", h.Cluster, f.label, v, err)
			}
			*f.into = t.UTC()
		}
	}
	if v, ok := h.Labels[labelDailyCost]; ok {
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil || n < 0 {
			return r, fmt.Errorf("header of spare %q: label %s=%q is not a number of nano-euros", h.Cluster, labelDailyCost, v)
		}
		r.DailyNanos = n
	}
	return r, nil
}

// Into writes r's labels, expiry and phase into h (the other labels are left as they are).
func (r Record) Into(h *statestore.Header) {
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	set := func(label, v string) {
		if v == "" {
			delete(h.Labels, label)
		} else {
			h.Labels[label] = v
		}
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	h.Kind, h.Phase, h.Expires = Kind, string(r.Phase), r.Stale
	set(labelReady, stamp(r.Ready))
	set(labelChecked, stamp(r.Checked))
	set(labelClaimedAt, stamp(r.ClaimedAt))
	set(labelClaimedBy, r.ClaimedBy)
	set(labelUnhealthy, clip(r.Unhealthy, maxUnhealthy))
	set(labelTalos, r.Talos)
	set(labelKubernetes, r.Kubernetes)
	if r.Shared {
		set(labelShared, "true")
	} else {
		set(labelShared, "")
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// Claimable says why r may not be handed out at now to a cluster running kubernetes, or ""
// when it may: ready, unclaimed, healthy, fresh, and running the Kubernetes version this bot
// pins for its Talos. Choose adds what depends on the asker (repository, spec).
func (r Record) Claimable(now time.Time, kubernetes string) string {
	switch {
	case r.Phase == lifecycle.PhaseProvisioning:
		return "building since " + r.Created.UTC().Format("15:04 UTC")
	case r.Phase != lifecycle.PhaseReady:
		return "phase " + string(r.Phase)
	case r.ClaimedBy != "":
		return "claimed by " + r.ClaimedBy
	case r.Unhealthy != "":
		return "failed its health check at " + r.Checked.UTC().Format("15:04 UTC") + ": " + r.Unhealthy
	case r.Stale.IsZero() || !now.Before(r.Stale):
		return "stale: built " + r.Ready.UTC().Format("2006-01-02 15:04 UTC") + ", past pool.max_age"
	case kubernetes != "" && r.Kubernetes != kubernetes:
		return fmt.Sprintf("runs Kubernetes %s, this bot pins %s for Talos %s", r.Kubernetes, kubernetes, r.Talos)
	}
	return ""
}

// Offered tells whether r may go to a cluster of repository: the repository that built it (GitHub
// names are case-insensitive), or any other when both share (pool.share: issue 36's trust
// boundary for reused machines, as for parked workers).
func (r Record) Offered(repository string, share bool) bool {
	return strings.EqualFold(r.Repository, repository) || (r.Shared && share)
}
