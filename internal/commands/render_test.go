package commands

import (
	"github.com/pocbot/pocbot/internal/lifecycle"

	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var (
	t0  = time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	now = t0.Add(20 * time.Minute)
)

func defaultCost() CostView {
	return CostView{
		Cluster: "acme-shop-42",
		Lines: []CostLine{
			{"Elastic Metal EM-A116X-SSD (worker)", "0.0770 €", "1.85 €", "56.21 €", "catalog API, 2026-10-17"},
			{"3 × Instance PLAY2-NANO (control planes)", "0.0826 €", "1.98 €", "60.31 €", "catalog API, 2026-10-17"},
			{"3 × block volume 20 GB, 5K IOPS", "0.0072 €", "0.17 €", "5.26 €", "table 2026-10-17, estimate"},
			{"3 × reserved IPv4", "0.0120 €", "0.29 €", "8.76 €", "table 2026-10-17, estimate"},
			{"snapshot + image object (shared)", "0.0003 €", "0.01 €", "0.22 €", "table 2026-10-17, estimate"},
		},
		TotalHourly: "0.1791 €", TotalDaily: "4.30 €", TotalMonthly: "130.76 €",
		Accrued: "0.06 €", Created: t0, Now: now,
		UntilExpiry: "1.37 €", Expires: t0.Add(8 * time.Hour),
		Fees:  []Fee{{"Elastic Metal setup fee", "0.00 €", "catalog API, 2026-10-17"}},
		Notes: []string{"The monthly EM-A116X-SSD subscription (27.99 €/month) would be cheaper only for more than 15 days."},
	}
}

func upView(kc KubeconfigAccess, cidrs []string) UpView {
	return UpView{
		Cluster:        "acme-shop-42",
		APIEndpoints:   []string{"k8s-poc.example.com:6443"},
		TalosEndpoints: []string{"51.15.0.1:50000", "51.15.0.2:50000", "51.15.0.3:50000"},
		EdgeAddress:    "edge.example.com (163.172.0.9)",
		Kubeconfig:     kc,
		DailyCost:      "4.30 €", AccruedCost: "0.06 €",
		Expires: t0.Add(8 * time.Hour), KeepLabel: "poc/keep",
		AdminCIDRs: cidrs,
	}
}

func steps(final bool) []Step {
	s := []Step{
		{Name: "image: schematic and qcow2 in Object Storage", State: StepSkipped},
		{Name: "block snapshot import", State: StepDone, Duration: 212 * time.Second},
		{Name: "security group + reserved IPs", State: StepDone, Duration: 3 * time.Second},
		{Name: "control planes ×3", State: StepDone, Duration: 14 * time.Second},
		{Name: "worker: Elastic Metal order", State: StepDone, Duration: 6 * time.Minute},
		{Name: "worker: rescue, dd, reboot", State: StepRunning, Duration: 95 * time.Second, Note: "writing 1.2 GiB"},
		{Name: "etcd bootstrap", State: StepPending},
		{Name: "Kubernetes ready", State: StepPending},
	}
	if final {
		for i := range s {
			if s[i].State != StepSkipped {
				s[i].State, s[i].Note = StepDone, ""
				if s[i].Duration == 0 {
					s[i].Duration = 70 * time.Second
				}
			}
		}
	}
	return s
}

var kcURL = KubeconfigAccess{Login: "alice", URL: "http://127.0.0.1:9000/pocbot-state/kubeconfigs/acme-shop-42.age?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature=" + strings.Repeat("0f", 32),
	URLExpires: now.Add(time.Hour), Recipients: 2, OperatorCmd: "bot kubeconfig --cluster acme-shop-42"}

func goldenCases() map[string]string {
	down := DownView{Cluster: "acme-shop-42", Duration: 95 * time.Second, Accrued: "1.43 €", Deleted: []DeletedResource{
		{Kind: "instance", Name: "poc-acme-shop-42-cp-1", ID: "11111111-1111-1111-1111-111111111111"},
		{Kind: "Elastic Metal server", Name: "poc-acme-shop-42-edge-01", ID: "22222222-2222-2222-2222-222222222222"},
		{Kind: "reserved IP", Name: "51.15.0.1", ID: "33333333-3333-3333-3333-333333333333"},
		{Kind: "security group", Name: "poc-acme-shop-42-sg", ID: "44444444-4444-4444-4444-444444444444"},
	}}
	downFail := down
	downFail.Deleted = append([]DeletedResource{}, down.Deleted...)
	downFail.Deleted[3].Err = "scaleway: precondition failed: security group is in use (token: ghs_leakedtoken123)"
	plan := PlanView{
		Cluster: "acme-shop-42", TTL: 4 * time.Hour, Talos: "v1.13.11",
		Groups: []PlanGroup{
			{"image chain", []PlanItem{{"object", "talos/376567988ad3/v1.13.11/scaleway-amd64.qcow2", "shared, reused if present"}, {"block snapshot", "poc-talos-376567988ad3-v1.13.11", "imported from the object"}}},
			{"network", []PlanItem{{"security group", "poc-acme-shop-42-sg", "inbound drop, 9 rules"}, {"reserved IPv4", "poc-acme-shop-42-ip-cp-1", ""}}},
			{"control planes", []PlanItem{{"instance", "poc-acme-shop-42-cp-1", "PLAY2-NANO, 20 GB 5K IOPS"}}},
			{"worker", []PlanItem{{"Elastic Metal server", "poc-acme-shop-42-edge-01", "EM-A116X-SSD, written from rescue"}}},
		},
		Cost: defaultCost(),
	}
	plan.Cost.Accrued, plan.Cost.UntilExpiry = "", ""
	pf := PreflightView{
		Quotas: []QuotaRow{{What: "PLAY2-NANO Instances", Limit: "5", From: "Scaleway's documented default (payment method validated)", Used: 3, Need: 3, Headroom: "-1"},
			{What: "Instance flexible IPs", Limit: "20", From: "quotas: in .github/poc.yml", Used: 3, Need: 3, Headroom: "14", OK: true},
			{What: "GP1-XL Instances", Limit: "unknown", From: "no source: not checked", Used: 3, Need: 3, Headroom: "unknown", OK: true}},
		Unread: "the bot's key lacks OrganizationReadOnly on the organization; `bot init --iam` adds it",
		Offers: []OfferRow{{Offer: "EM-A116X-SSD", Stock: "empty", PerDay: "4.30 €", Outcome: "skipped: out of stock"},
			{Offer: "EM-A115X-SSD", Stock: "low", PerDay: "4.63 €", Outcome: "taken"}},
		Risks: []string{"Elastic Metal offer EM-A115X-SSD is low on stock: the order may not be delivered"},
		ETA:   11*time.Minute + 2*time.Second, ETAFrom: "the latency profile", Path: "cold, shared image",
	}
	planPF := plan
	planPF.Preflight = &pf
	stopped := ScheduleStoppedView{LastRun: now.Add(-3*time.Hour - 7*time.Minute), Now: now, Every: time.Hour, Repo: "acme/shop"}
	return map[string]string{
		"help":         HelpText(ParseConfig{}, ""),
		"help_up":      HelpText(ParseConfig{}, VerbUp),
		"parse_error":  Parse("/poc up --ttl 9d --x", ParseConfig{}).Reply,
		"unknown_verb": Parse("/poc deploy <b>now</b>", ParseConfig{}).Reply,
		"refusal":      RefusalReply("bob", VerbUp, "read"),
		"sticky_progress": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900100, Verb: VerbUp, Requester: "alice",
			Phase: "provisioning", Now: now, Started: t0, RunURL: "https://github.com/acme/shop/actions/runs/9001", Steps: steps(false)}),
		"sticky_progress_eta": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900100, Verb: VerbUp, Requester: "alice",
			Phase: "provisioning", Now: now, Started: t0, RunURL: "https://github.com/acme/shop/actions/runs/9001", Steps: steps(false),
			ETA: pf.ETAText()}),
		"sticky_up_ready": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900100, Verb: VerbUp, Requester: "alice",
			Phase: "ready", Now: now, Started: t0, RunURL: "https://github.com/acme/shop/actions/runs/9001", Steps: steps(true),
			Up: ptr(upView(kcURL, []string{"203.0.113.0/24"}))}),
		"sticky_up_adopted": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900100, Verb: VerbUp, Requester: "alice",
			Phase: "ready", Now: now, Started: t0, RunURL: "https://github.com/acme/shop/actions/runs/9001", Steps: steps(true),
			Up: ptr(func() UpView {
				u := upView(kcURL, []string{"203.0.113.0/24"})
				u.AdoptedWorker = "parked worker 22222222-2222-2222-2222-222222222222, parked by acme/shop (cluster acme-shop-41) at 2026-10-17T08:00:00Z; " +
					"its disk written again from the pinned image and read back (sha256 3b2f9c0a11d4…) at 2026-10-17T08:04:10Z"
				return u
			}())}),
		"sticky_up_claimed": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900100, Verb: VerbUp, Requester: "alice",
			Phase: "ready", Now: now, Started: t0, RunURL: "https://github.com/acme/shop/actions/runs/9001", Steps: steps(true),
			Up: ptr(func() UpView {
				u := upView(kcURL, []string{"203.0.113.0/24"})
				u.Path = "warm: claimed a warm spare (age 42 min): spare-qwertyui"
				return u
			}())}),
		"sticky_up_nokeys_open": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900100, Verb: VerbUp, Requester: "alice",
			Phase: "ready", Now: now, RunURL: "https://github.com/acme/shop/actions/runs/9001", Steps: steps(true),
			Up: ptr(upView(KubeconfigAccess{Login: "alice", NoKeys: true}, nil))}),
		"sticky_failed": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900200, Verb: VerbUp, Requester: "alice",
			Phase: "failed", Now: now, Steps: steps(false),
			Error: "worker: rescue SSH on 163.172.0.9:22 not reachable after 10m: dial tcp: i/o timeout. Run `/poc up` again to resume.",
			Log:   "step 1 ok\nAuthorization: Bearer ghs_abcdef\n```\nnested fence\n```\nstep 2 failed"}),
		// A refusal after the status comment opened is not shown as still running (⏳) over a failure
		// (❌): the phase is typed, and a refused one says so (issue 23).
		"sticky_refused": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900250, Verb: VerbUp, Requester: "alice",
			Phase: lifecycle.PhaseRefused, Now: now, Error: "Nothing was created: another `/poc up` of this repository took the budget meanwhile."}),
		"sticky_paused": RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900400, Verb: VerbPause, Requester: "alice", Phase: "paused", Now: now,
			Paused: &PausedView{Cluster: "acme-shop-42", Kept: []string{"3 reserved IPv4", "security group", "secrets bundle and CA (state)"}, Snapshot: "2.1 MiB, verified",
				DailyCost: "€ 0.30", RunningDailyCost: "€ 4.30", Parked: true, Expires: now.Add(72 * time.Hour)}}),
		"sticky_down":   RenderSticky(StickyView{Cluster: "acme-shop-42", Serial: 900300, Verb: VerbDown, Requester: "alice", Phase: "destroyed", Now: now, Down: &down}),
		"down_partial":  RenderDown(downFail),
		"down_nothing":  RenderDown(DownView{Cluster: "acme-shop-42"}),
		"notify_ok":     RenderNotify(NotifyView{Requester: "alice", Verb: VerbUp, Cluster: "acme-shop-42", OK: true, Summary: "API at k8s-poc.example.com:6443, 4.30 €/day", StickyURL: "https://github.com/acme/shop/issues/42#issuecomment-1"}),
		"notify_failed": RenderNotify(NotifyView{Requester: "alice", Verb: VerbDown, Cluster: "acme-shop-42", StickyURL: "https://github.com/acme/shop/issues/42#issuecomment-1"}),
		"cost":          RenderCost(defaultCost()),
		"status": RenderStatus(StatusView{Cluster: "acme-shop-42", Exists: true, Phase: "ready", Created: t0, Expires: t0.Add(8 * time.Hour), Now: now,
			Lock:         &StatusLock{RunID: "9002", Command: "/poc extend", Actor: "bob", Since: now.Add(-10 * time.Second)},
			Health:       []HealthCheck{{Name: "Talos API", OK: true, Detail: "3/3 nodes"}, {Name: "Kubernetes /readyz", Detail: "connection refused"}},
			Resources:    statusResources,
			APIEndpoints: []string{"51.15.0.1:6443", "51.15.0.2:6443", "51.15.0.3:6443"}, DailyCost: "4.30 €", Accrued: "0.06 €"}),
		"status_text": statusText(StatusView{Cluster: "acme-shop-42", Exists: true, Phase: "ready", Created: t0, Expires: t0.Add(8 * time.Hour), Now: now,
			Repository: "acme/shop", Number: 42, Kind: "issue", RequestedBy: "alice", DownFailed: now.Add(-time.Hour),
			Lock: &StatusLock{ID: "lock-1", RunID: "9002", Command: "/poc extend", Actor: "bob", Since: now.Add(-10 * time.Second), Expires: now.Add(2 * time.Minute)},
			Health: []HealthCheck{{Name: "talos-api cp-0", OK: true, Target: "51.15.0.1:50000", Detail: "ready in 80ms"},
				{Name: "kubernetes-api", Target: "51.15.0.1:6443", Detail: "connection refused"}},
			HealthNote: "this runner (20.0.0.7/32) is outside the cluster's admin_cidrs (198.51.100.0/24)",
			Resources:  statusResources, APIEndpoints: []string{"51.15.0.1:6443"}, Edge: "163.172.0.9",
			DailyCost: "4.30 €", Accrued: "0.06 €", UntilExpiry: "1.43 €", CostNote: "lower bound: some prices unknown"}),
		"status_text_unpriced": statusText(StatusView{Cluster: "ops-1", Exists: true, Phase: "paused", Created: t0, Now: now, Keep: true,
			CostNote: "SCW_ACCESS_KEY and SCW_SECRET_KEY are not set"}),
		"status_parked": RenderStatus(StatusView{Cluster: "acme-shop-42", Exists: true, Phase: "ready", Created: t0, Expires: t0.Add(8 * time.Hour), Now: now,
			DailyCost: "€ 4.30", Accrued: "€ 0.54", Parked: "2 in this state bucket · € 0.3520 per hour"}),
		"status_unreachable": RenderStatus(StatusView{Cluster: "acme-shop-42", Exists: true, Phase: "ready", Created: t0, Expires: t0.Add(8 * time.Hour), Now: now,
			Health:     []HealthCheck{{Name: "talos-api cp-0", Detail: "cannot connect to 51.15.0.1:50000: i/o timeout"}, {Name: "talos-api worker", OK: true, Detail: "ready in 80ms"}},
			HealthNote: "this runner (20.0.0.7/32) is outside the cluster's admin_cidrs (198.51.100.0/24) <script>"}),
		"status_keep":    RenderStatus(StatusView{Cluster: "acme-shop-42", Exists: true, Phase: "ready", Created: t0, Expires: t0.Add(time.Hour), Now: now, Keep: true}),
		"status_none":    RenderStatus(StatusView{Cluster: "acme-shop-42"}),
		"expiry_warning": RenderExpiryWarning(ExpiryWarningView{Cluster: "acme-shop-42", Requester: "alice", At: now.Add(time.Hour), Now: now, Accrued: "1.20 €"}),
		"reaped":         RenderReaped(ReapedView{Down: down, Reason: ReapExpired, ExpiredAt: now}),
		"reaped_merged":  RenderReaped(ReapedView{Down: down, Reason: ReapMerged}),
		"budget_daily":   RenderBudgetRefusal(BudgetRefusalView{Limit: LimitMaxDailyEUR, Current: "12.90 €/day", Requested: "4.30 €/day", Max: "15 €/day", Running: []string{"acme-shop-1", "acme-shop-7", "acme-shop-9"}}),
		"budget_count":   RenderBudgetRefusal(BudgetRefusalView{Limit: LimitMaxClusters, Current: "3 clusters", Max: "3"}),
		"budget_unknown": RenderBudgetRefusal(BudgetRefusalView{Limit: LimitUnknownPrice, Detail: "No price for Elastic Metal EM-X999 in fr-par-1 (end of sale)."}),
		"plan":           RenderPlan(plan),
		"plan_preflight": RenderPlan(planPF),
		"quota_refusal": RenderQuotaRefusal("acme-shop-42", "Scaleway quota instance_servers_play2_nano (PLAY2-NANO Instances) would be exceeded: limit 5, in use 3, this cluster needs 3",
			PreflightView{Quotas: pf.Quotas, Unread: pf.Unread}),
		"kubeconfig": RenderKubeconfig("acme-shop-42", kcURL, now),
		"kubeconfig_dead_link": RenderKubeconfig("acme-shop-42", KubeconfigAccess{Login: "alice", OperatorCmd: "bot kubeconfig --cluster acme-shop-42",
			DeadLink: &DeadLink{Answer: "403 Forbidden", Fix: "the key that signs links may not read public/ objects: on Scaleway it needs an IAM policy granting ObjectStorageObjectsRead on the project AND, when the bucket has a policy, a statement allowing it s3:GetObject on STATE-BUCKET/public/* (docs/install.md, \"Presigning key\")"}}, now),
		// A reply per kind of refusal clusterops decides (RenderRefused).
		"refused_closed":    RenderRefused(RefusedView{Kind: lifecycle.RefuseClosed, Cluster: "acme-shop-42"}),
		"refused_closed_pr": RenderRefused(RefusedView{Kind: lifecycle.RefuseClosed, Cluster: "acme-shop-42", IsPR: true}),
		"refused_dns_zone": RenderRefused(RefusedView{Kind: lifecycle.RefuseDNSZone, Cluster: "acme-shop-42",
			Zone: "prod.example.com", Zones: []string{"poc.example.com", "lab.example.com"}}),
		"refused_dns_zone_none": RenderRefused(RefusedView{Kind: lifecycle.RefuseDNSZone, Cluster: "acme-shop-42", Zone: "prod.example.com"}),
		"refused_invalid": RenderRefused(RefusedView{Kind: lifecycle.RefuseInvalid, Cluster: "acme-shop-42",
			Detail: `worker offer "EM-X999" is not one this bot can use <b>`}),
		"refused_changes": RenderRefused(RefusedView{Kind: lifecycle.RefuseChanges, Cluster: "acme-shop-42",
			Detail: `cluster "acme-shop-42" exists with other settings that cannot change in place: control planes 3 → 5 (the etcd membership is fixed at creation); run down first, then up with the new settings`,
			Plan: PlanView{Cluster: "acme-shop-42", Talos: "v1.13.11", AdminCIDRs: []string{"203.0.113.0/24"}, Changes: []Change{{Field: "ttl", From: "8h", To: "1d", InPlace: true},
				{Field: "control planes", From: "3", To: "5", Reason: "the etcd membership is fixed at creation"}}}}),
		"refused_budget": RenderRefused(RefusedView{Kind: lifecycle.RefuseBudget, Cluster: "acme-shop-42",
			Budget: &BudgetRefusalView{Limit: LimitMaxClusters, Current: "3 clusters", Requested: "1 cluster", Max: "3", Running: []string{"acme-shop-1", "acme-shop-7", "acme-shop-9"}}}),
		"refused_budget_unchecked": RenderRefused(RefusedView{Kind: lifecycle.RefuseBudget, Cluster: "acme-shop-42",
			Detail: "list clusters/: s3: 503 Slow Down <retry>"}),
		"refused_collision": RenderRefused(RefusedView{Kind: lifecycle.RefuseCollision, Cluster: "acme-shop-42", Owner: "acme-shop/x_y", OwnerNumber: 42}),
		"refused_scope":     RenderRefused(RefusedView{Kind: lifecycle.RefuseScope, Cluster: "acme-shop-42", Owner: "acme/shop", OwnerNumber: 42}),
		"refused_rollback":  RenderRefused(RefusedView{Kind: lifecycle.RefuseRollback, Cluster: "acme-shop-42", Serial: 12, Witness: 15}),
		"refused_locked": RenderRefused(RefusedView{Kind: lifecycle.RefuseLocked, Cluster: "acme-shop-42",
			Lock: LockView{Command: "/poc up", Actor: "carol_x", RunID: "4242", Since: t0, Waited: 10 * time.Minute}}),
		"refused_locked_unknown": RenderRefused(RefusedView{Kind: lifecycle.RefuseLocked, Cluster: "acme-shop-42", Lock: LockView{Since: t0, Waited: 300 * time.Millisecond}}),
		"refused_max_ttl":        RenderRefused(RefusedView{Kind: lifecycle.RefuseMaxTTL, Cluster: "acme-shop-42", Requested: 9 * 24 * time.Hour, Max: 7 * 24 * time.Hour}),
		"refused_quota": RenderRefused(RefusedView{Kind: lifecycle.RefuseQuota, Cluster: "acme-shop-42", Quota: &QuotaRefusalView{
			Reason:    "Scaleway quota instance_servers_play2_nano (PLAY2-NANO Instances) would be exceeded: limit 5, in use 3, this cluster needs 3",
			Preflight: PreflightView{Quotas: pf.Quotas, Unread: pf.Unread}}}),
		"refused_quota_unexplained": RenderRefused(RefusedView{Kind: lifecycle.RefuseQuota, Cluster: "acme-shop-42",
			Detail: "up acme-shop-42 refused by the pre-flight, nothing was created: quotas: 500 Internal Server Error"}),
		"refused_no_cluster": RenderRefused(RefusedView{Kind: lifecycle.RefuseNoCluster, Cluster: "acme-shop-42"}),
		"refused_not_paused": RenderRefused(RefusedView{Kind: lifecycle.RefuseNotPaused, Cluster: "acme-shop-42", Phase: lifecycle.PhaseReady}),
		"refused_not_ready":  RenderRefused(RefusedView{Kind: lifecycle.RefuseNotReady, Cluster: "acme-shop-42", Phase: lifecycle.PhaseProvisioning}),
		"schedule_stopped":   RenderScheduleStopped(stopped),
		// A command's reply carries the notice (issue 22: "says so in its reply").
		"status_schedule_stopped": WithNotice(RenderStatus(StatusView{Cluster: "acme-shop-42"}), RenderScheduleStopped(stopped)),
		"up_changes": renderChanges([]Change{{Field: "ttl", From: "8h", To: "1d", InPlace: true},
			{Field: "control planes", From: "3", To: "5", Reason: "the etcd membership is fixed at creation: `/poc down` then `/poc up --cp-count 5`"}}),
	}
}

func ptr[T any](v T) *T { return &v }

var statusResources = []ResourceLine{
	{Kind: "instance", Name: "poc-acme-shop-42-cp-1", ID: "1111", Address: "51.15.0.1", State: "running", Zone: "fr-par-1"},
	{Kind: "Elastic Metal server", Name: "poc-acme-shop-42-edge-01", ID: "2222", Address: "163.172.0.9", State: "ready", Zone: "fr-par-2"},
}

// statusText is WriteStatusText's text.
func statusText(v StatusView) string {
	var b strings.Builder
	if err := WriteStatusText(&b, v); err != nil {
		panic(err)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for name, got := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			if got == "" {
				t.Fatal("empty body")
			}
			if ContainsSecret(got) {
				t.Errorf("body holds a secret: %q", Redact(got))
			}
			if len(got) >= MaxCommentBytes {
				t.Errorf("body is %d bytes, over GitHub's limit", len(got))
			}
			path := filepath.Join("testdata", name+".golden.md")
			if strings.Contains(name, "_text") { // a terminal's text, not Markdown
				path = filepath.Join("testdata", name+".golden.txt")
			}
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read %s: %v (run `go test ./internal/commands -run TestGolden -update` to create it)", path, err)
			}
			if string(want) != got {
				t.Errorf("%s differs from the rendering (rerun with -update after reviewing):\n--- got ---\n%s", path, got)
			}
		})
	}
}

func TestRenderedContent(t *testing.T) {
	g := goldenCases()
	tests := []struct {
		name    string
		want    []string
		mustNot []string
	}{
		{"sticky_up_ready", []string{"<!-- pocbot:cluster=acme-shop-42 -->", "<!-- pocbot:serial=900100 -->", "`k8s-poc.example.com:6443`",
			"`51.15.0.1:50000`", "edge.example.com", "curl -fsS 'http://127.0.0.1:9000/", "| age -d -i ~/.ssh/id_ed25519 > kubeconfig",
			"4.30 € per day", "2026-10-17 17:00 UTC", "/poc extend 4h", "actions/runs/9001", "```\n/poc down\n```", "<details><summary>Steps (8)</summary>"},
			[]string{"WARNING"}},
		{"sticky_up_nokeys_open", []string{"[!WARNING]", "0.0.0.0/0", "https://github.com/settings/ssh/new", "/poc kubeconfig"}, []string{"curl"}},
		{"sticky_progress", []string{"| ⏳ | worker: rescue, dd, reboot — writing 1.2 GiB | 1m 35s |", "| ⏭️ |", "| ✅ | block snapshot import | 3m 32s |", "| ⏳ | etcd bootstrap | waiting |", "running for 20m"}, []string{"<details>"}},
		{"sticky_failed", []string{"❌ **Failed:**", "i/o timeout", "````text", "[REDACTED]"}, []string{"ghs_abcdef"}},
		{"down_partial", []string{"**1 could not be deleted**", "[REDACTED]"}, []string{"ghs_leaked"}},
		{"cost", []string{"**Total per day: 4.30 €**", "| 56.21 € |", "table 2026-10-17, estimate", "Accrued since creation", "Until expiry", "setup fee"}, nil},
		{"unknown_verb", []string{"“deploy”"}, []string{"<b>"}},
		{"expiry_warning", []string{"tearing down at 2026-10-17 10:20 UTC", "`/poc extend 4h` or label `poc/keep`", "@alice"}, nil},
		{"status", []string{"held by run 9002", "❌ connection refused", "age 20m", "`poc/keep` label | absent"}, nil},
		{"status_text", []string{"for:          acme/shop #42 (issue), requested by alice", "lock:         held by bob (/poc extend, run 9002)",
			"lease until", "; id lock-1", "cost:         accrued 0.06 € since created, 4.30 € per day, 1.43 € more until expiry (lower bound",
			"fr-par-2", "✗ kubernetes-api", "51.15.0.1:6443", "note: this runner"}, nil},
		{"status_text_unpriced", []string{"expires:      never", "keep label:   yes", "cost:         unknown (SCW_ACCESS_KEY", "resources (0):"}, []string{"health:"}},
		{"status_keep", []string{"paused by the `poc/keep` label", "present: expiry paused"}, nil},
		{"schedule_stopped", []string{"[!WARNING]", "not run since 2026-10-17 06:13 UTC (3h 7m ago; it should run every 1h)", "60 days", "`gh workflow enable poc.yml --repo acme/shop`"}, nil},
		{"status_schedule_stopped", []string{"No cluster exists for this issue", "/poc up\n```\n\n> [!WARNING]\n> The reaper's schedule has not run since"}, nil},
		{"budget_daily", []string{"`max_daily_eur`", "12.90 €/day", "4.30 €/day", "15 €/day"}, nil},
	}
	for _, tt := range tests {
		body := g[tt.name]
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q:\n%s", tt.name, w, body)
			}
		}
		for _, w := range tt.mustNot {
			if strings.Contains(body, w) {
				t.Errorf("%s holds %q:\n%s", tt.name, w, body)
			}
		}
	}
}

func TestStickyUnderLimit(t *testing.T) {
	huge := strings.Repeat("log line with some text 0123456789\n", 2500) + "LAST LINE: the failure"
	many := make([]Step, 1500)
	for i := range many {
		many[i] = Step{Name: strings.Repeat("step ", 6), State: StepDone, Duration: time.Second}
	}
	tests := []struct {
		name     string
		v        StickyView
		wantTail bool
	}{
		{"huge log", StickyView{Cluster: "c-1", Serial: 1, Verb: VerbUp, Phase: "failed", Error: "boom", Log: huge, Steps: steps(false)}, true},
		{"huge log and many steps", StickyView{Cluster: "c-1", Serial: 1, Verb: VerbUp, Phase: "failed", Log: huge, Steps: many}, false},
		{"multibyte log", StickyView{Cluster: "c-1", Serial: 1, Verb: VerbUp, Log: strings.Repeat("é⏳", 40000)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := RenderSticky(tt.v)
			if len(body) >= MaxCommentBytes {
				t.Fatalf("body is %d bytes", len(body))
			}
			if !strings.HasPrefix(body, StickyMarker("c-1")) || !strings.Contains(body, "pocbot:serial=1 -->") {
				t.Error("markers lost")
			}
			if tt.wantTail && (!strings.Contains(body, "LAST LINE: the failure") || !strings.Contains(body, "earlier lines cut")) {
				t.Error("the log's tail must survive truncation, with a note")
			}
			if !strings.HasPrefix(body, "<!--") || strings.ContainsRune(body, '\uFFFD') {
				t.Error("truncation broke the body")
			}
		})
	}
}

func TestShouldOverwrite(t *testing.T) {
	body := RenderSticky(StickyView{Cluster: "c-1", Serial: 500, Verb: VerbUp})
	tests := []struct {
		existing string
		serial   int64
		want     bool
	}{
		{body, 499, false},
		{body, 500, true},
		{body, 501, true},
		{"", 1, true},
		{"a human comment", 1, true},
		{"<!-- pocbot:serial=notanumber -->", 1, true},
	}
	for _, tt := range tests {
		if got := ShouldOverwrite(tt.existing, tt.serial); got != tt.want {
			t.Errorf("ShouldOverwrite(%.40q, %d) = %v, want %v", tt.existing, tt.serial, got, tt.want)
		}
	}
	if c, ok := StickyCluster(body); !ok || c != "c-1" {
		t.Errorf("StickyCluster = %q, %v", c, ok)
	}
	if _, ok := StickyCluster("no marker"); ok {
		t.Error("StickyCluster found a marker in plain text")
	}
}

func TestEscape(t *testing.T) {
	tests := map[string]string{
		"plain":                     "plain",
		"*bold* _it_":               `\*bold\* \_it\_`,
		"[x](http://e)":             `\[x\](http://e)`,
		"<!-- pocbot:cluster=x -->": "&lt;!-- pocbot:cluster=x --&gt;",
		"@octocat #12":              "@\u200boctocat #\u200b12",
		"a|b`c":                     "a\\|b\\`c",
		"line\nbreak":               "line break",
		"rtl\u202Eevil":             "rtl\uFFFDevil",
		strings.Repeat("x", 100):    strings.Repeat("x", MaxEcho-1) + "…",
	}
	for in, want := range tests {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := inlineCode("a`b"); got != "``a`b``" {
		t.Errorf("inlineCode = %q", got)
	}
	if got := mention("pocbot[bot]"); strings.HasPrefix(got, "@pocbot") {
		t.Errorf("bots must not be mentioned: %q", got)
	}
}

// A refusal's reason is the bot's own text: the reply shows all of it, escaped, however long.
// MaxEcho bounds what a user makes the bot repeat (Quote, Escape), not the bot's words; the
// replies below cut these reasons at 48 characters before.
func TestRefusalReasonIsWhole(t *testing.T) {
	long := "cluster `acme-shop-42` exists with other settings that cannot change in place: control planes 3 → 5 *<b>*"
	escaped := EscapeText(long)
	if len([]rune(long)) <= MaxEcho {
		t.Fatalf("the reason is %d characters, not longer than MaxEcho (%d): the test proves nothing", len([]rune(long)), MaxEcho)
	}
	holder := LockView{Command: "/poc up --ttl 2d --cp-count 5", Actor: "a-rather-long-github-login-name", RunID: "12345678901", Since: t0, Waited: time.Minute}
	tests := map[string]struct {
		v    RefusedView
		want string
	}{
		"invalid":          {RefusedView{Kind: lifecycle.RefuseInvalid, Cluster: "acme-shop-42", Detail: long}, escaped},
		"changes":          {RefusedView{Kind: lifecycle.RefuseChanges, Cluster: "acme-shop-42", Detail: long}, escaped},
		"budget unchecked": {RefusedView{Kind: lifecycle.RefuseBudget, Cluster: "acme-shop-42", Detail: long}, escaped},
		"precondition":     {RefusedView{Kind: lifecycle.RefusePrecondition, Cluster: "acme-shop-42", Detail: long}, escaped},
		"locked":           {RefusedView{Kind: lifecycle.RefuseLocked, Cluster: "acme-shop-42", Lock: holder}, EscapeText("/poc up --ttl 2d --cp-count 5 by a-rather-long-github-login-name (run 12345678901)")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := RenderRefused(tt.v)
			if !strings.Contains(got, tt.want) {
				t.Errorf("reply does not hold the whole reason %q:\n%s", tt.want, got)
			}
			if strings.Contains(got, "<b>") {
				t.Errorf("reply holds raw HTML:\n%s", got)
			}
		})
	}
	// What a user wrote stays bounded: Quote still cuts it.
	if got := Quote(strings.Repeat("y", 2*MaxEcho)); strings.Count(got, "y") != MaxEcho-1 {
		t.Errorf("Quote of user text = %q, want it cut to %d characters", got, MaxEcho-1)
	}
}

func TestStickyStateSerial(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want int64
		ok   bool
	}{
		{"rendered", RenderSticky(StickyView{Cluster: "c", Serial: 7, StateSerial: 46, Phase: "ready"}), 46, true},
		{"none recorded", RenderSticky(StickyView{Cluster: "c", Serial: 7, Phase: "destroyed"}), 0, false},
		{"zero is none", "<!-- pocbot:state-serial=0 -->", 0, false},
		{"negative is not a serial", "<!-- pocbot:state-serial=-5 -->", 0, false},
		{"too long", "<!-- pocbot:state-serial=" + strings.Repeat("9", 20) + " -->", 0, false},
		{"out of range", "<!-- pocbot:state-serial=9999999999999999999 -->", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := StickyStateSerial(tc.body)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("StickyStateSerial = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
