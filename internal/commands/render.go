package commands

import (
	"github.com/pocbot/pocbot/internal/lifecycle"

	"fmt"
	"slices"
	"strings"
	"time"
)

// Money figures arrive as preformatted strings ("3.84 €", "unknown"): the cost package owns
// arithmetic and rounding, this package only lays them out.

// KubeconfigAccess says how the requester gets the kubeconfig.
type KubeconfigAccess struct {
	Login      string    // the requester
	URL        string    // presigned URL of the age-encrypted kubeconfig; "" when none was made
	URLExpires time.Time // when URL stops working
	Recipients int       // how many of the requester's SSH keys it is encrypted to
	NoKeys     bool      // the requester has no public SSH key age can encrypt to
	Unusable   []string  // the types of the requester's keys age cannot encrypt to (ecdsa, sk-…)
	// Renamed is set when the account that asked no longer holds Login (renamed, deleted, or the
	// login re-registered by someone else): nothing was encrypted.
	Renamed     *IdentityMismatch
	OperatorCmd string // e.g. "bot kubeconfig --cluster acme-shop-42" for the state-key holder
	// DeadLink is set when the fresh link failed its check (a ranged GET through it): it is not
	// posted, and the reply says why and what to fix.
	DeadLink *DeadLink
}

// DeadLink is a presigned link that did not work when the bot tried it.
type DeadLink struct {
	Answer string // what the link answered: "403 Forbidden", or "no answer (…)"
	Fix    string // what the operator should change
}

// UpView is the final body of a successful `up`.
type UpView struct {
	Cluster        string
	APIEndpoints   []string // host:6443 — the DNS name when a zone is set, the IPs otherwise
	TalosEndpoints []string // host:50000
	EdgeAddress    string   // the worker's address (and DNS name when a zone is set)
	Kubeconfig     KubeconfigAccess
	DailyCost      string
	AccruedCost    string
	Expires        time.Time
	Keep           bool         // the keep label is on the issue: expiry paused
	KeepLabel      string       // "poc/keep"
	KeepIgnored    *KeepRefusal // the keep label is on the issue but does not count
	AdminCIDRs     []string
	Changes        []Change // what this `up` changed on an existing cluster, if anything
	// WorkerOffer says which worker offer the pre-flight took and why ("" when there was no
	// choice to tell).
	WorkerOffer string
	// AdoptedWorker says that the worker is a parked one this cluster adopted, and from where:
	// who parked it, when, and the proof that its disk was written again (cluster.OutWorkerAdopted;
	// "" for a worker ordered for this cluster).
	AdoptedWorker string
	// Path says, for an up of a new cluster that could claim a spare of the warm pool, which path
	// it took and why ("warm: claimed a warm spare (age …): …", "cold: …"); "" otherwise.
	Path string
}

// DeletedResource is one line of a teardown report.
type DeletedResource struct {
	Kind string // "instance", "reserved IP", "security group", …
	Name string
	ID   string
	Err  string // non-empty: deleting it failed (redacted when rendered)
}

// DownView is the result of `/poc down` (and of the reaper's teardown).
type DownView struct {
	Cluster  string
	Deleted  []DeletedResource
	Duration time.Duration
	Accrued  string // what the cluster cost over its life
}

// CostLine is one billable resource.
type CostLine struct {
	Resource string // "3 × control plane PLAY2-NANO"
	Hourly   string
	Daily    string
	Monthly  string // per 730-hour month
	Source   string // "catalog API, 2026-10-17" or "table 2026-10-17, estimate"
}

// Fee is a one-time charge (an Elastic Metal setup fee).
type Fee struct {
	Name   string
	Amount string
	Source string
}

// CostView is the reply to `/poc cost` (and the cost part of a plan).
type CostView struct {
	Cluster      string
	Lines        []CostLine
	TotalHourly  string
	TotalDaily   string
	TotalMonthly string
	Accrued      string    // since Created; "" for a plan
	Created      time.Time // zero for a plan
	UntilExpiry  string
	Expires      time.Time
	Now          time.Time
	Fees         []Fee
	Notes        []string // trusted remarks: a cheaper monthly offer, unknown prices, …
}

// HealthCheck is one probe of `/poc status`.
type HealthCheck struct {
	Name   string // "talos-api cp-0", "kubernetes-api"
	OK     bool
	Target string // the address checked, e.g. "51.15.0.1:50000"; "" when none
	Detail string
}

// ResourceLine is one resource of `/poc status`.
type ResourceLine struct {
	Kind    string
	Name    string
	ID      string
	Address string
	State   string // the status recorded in the state
	Zone    string
}

// StatusLock is who holds a cluster's lock.
type StatusLock struct {
	ID, Actor, Command, RunID string
	Since, Expires            time.Time // Expires: the end of the lease
}

// StatusView is a cluster's status: the reply to `/poc status` (RenderStatus) and the report of
// `bot status` (WriteStatusText), built from the same facts (clusterops.StatusView).
type StatusView struct {
	Cluster     string
	Exists      bool // false: no cluster for this issue
	Phase       lifecycle.Phase
	Created     time.Time
	Expires     time.Time
	Now         time.Time
	Keep        bool
	KeepLabel   string
	KeepIgnored *KeepRefusal
	Lock        *StatusLock // nil: free
	Health      []HealthCheck
	// HealthNote says why the checks failed when the bot knows (the runner is outside the
	// cluster's admin CIDRs), and what to do; shown once, under the table.
	HealthNote   string
	Resources    []ResourceLine
	APIEndpoints []string
	DailyCost    string
	Accrued      string
	// Parked says the state bucket's parked workers and what they cost ("" when none): billed
	// although they belong to no cluster.
	Parked    string
	StickyURL string

	// What the cluster is for: its repository's issue or pull request (Repository "" for an
	// operator's cluster), who asked.
	Repository  string
	Number      int
	Kind        string // "issue" or "pull_request"
	RequestedBy string
	// DownFailed is when a teardown last failed (the reaper retries); MetaNote says why the
	// header's metadata could not be read.
	DownFailed time.Time
	MetaNote   string
	Edge       string // the worker's address
	// UntilExpiry is the cost from now until expiry; CostNote says why the cost is unknown, or
	// that it is a lower bound (some prices unknown).
	UntilExpiry string
	CostNote    string
}

// ExpiryWarningView is the reaper's one warning before a teardown.
type ExpiryWarningView struct {
	Cluster   string
	Requester string
	At        time.Time
	Now       time.Time
	KeepLabel string
	Accrued   string
	// KeepIgnored: the keep label is on the issue but does not count.
	KeepIgnored *KeepRefusal
}

// ReapReason says why the reaper destroyed a cluster.
type ReapReason string

// The reaper's reasons.
const (
	ReapExpired ReapReason = "expired"
	ReapClosed  ReapReason = "closed"
	ReapMerged  ReapReason = "merged"
)

// ReapedView is posted on the issue after the reaper's teardown.
type ReapedView struct {
	Down      DownView
	Reason    ReapReason
	ExpiredAt time.Time
}

// BudgetLimit names the repository limit that refused an `up`.
type BudgetLimit string

// The limits of .github/poc.yml.
const (
	LimitMaxClusters  BudgetLimit = "max_clusters"
	LimitMaxDailyEUR  BudgetLimit = "max_daily_eur"
	LimitMaxTTL       BudgetLimit = "max_ttl"
	LimitUnknownPrice BudgetLimit = "allow_unknown_prices"
)

// BudgetRefusalView explains a refused `up`: which limit, the figures.
type BudgetRefusalView struct {
	Limit     BudgetLimit
	Current   string   // e.g. "3 clusters" or "11.52 €/day"
	Requested string   // what this cluster adds: "1 cluster", "3.84 €/day"
	Max       string   // the limit's value
	Running   []string // clusters counted (names)
	Detail    string   // trusted extra, e.g. the compute item without a price
}

// PlanItem is a resource a plan would create.
type PlanItem struct {
	Kind   string
	Name   string
	Detail string
}

// PlanGroup groups plan items ("network", "image chain", "control planes", "worker", "DNS").
type PlanGroup struct {
	Name  string
	Items []PlanItem
}

// Change is one difference between the running cluster and an `up`'s settings.
type Change struct {
	Field   string
	From    string
	To      string
	InPlace bool   // applied without recreating anything
	Reason  string // why it cannot change in place (when !InPlace)
}

// PlanView is the reply to `/poc up --dry-run`.
type PlanView struct {
	Cluster    string
	Groups     []PlanGroup
	Changes    []Change
	TTL        time.Duration
	Talos      string
	AdminCIDRs []string
	Cost       CostView
	// Preflight is the quota headroom, the offers' stock and prices and the ETA (nil: not read).
	Preflight *PreflightView
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// relative says "in 3h 20m" / "5m ago" / "now".
func relative(t, now time.Time) string {
	if t.IsZero() || now.IsZero() {
		return ""
	}
	d := t.Sub(now)
	switch {
	case d > 30*time.Second:
		return "in " + FormatDuration(d)
	case d < -30*time.Second:
		return FormatDuration(-d) + " ago"
	}
	return "now"
}

func codeList(items []string) string {
	if len(items) == 0 {
		return "—"
	}
	shown, more := elide(items, maxRows)
	out := make([]string, len(shown), len(shown)+1)
	for i, s := range shown {
		out[i] = inlineCode(clip(s, maxCellBytes))
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(out, ", ")
}

const worldWarning = "> [!WARNING]\n> The Kubernetes and Talos APIs accept connections from **anywhere** (`0.0.0.0/0`). " +
	"Restrict them before any real use: `/poc up --admin-cidr YOUR.IP.ADDR.ESS/32`.\n"

func renderUpResult(u UpView, now time.Time) string {
	var b strings.Builder
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Kubernetes API | %s |\n", codeList(u.APIEndpoints))
	fmt.Fprintf(&b, "| Talos API | %s |\n", codeList(u.TalosEndpoints))
	if u.EdgeAddress != "" {
		fmt.Fprintf(&b, "| Edge (worker) | %s |\n", inlineCode(u.EdgeAddress))
	}
	if u.DailyCost != "" {
		cost := cell(u.DailyCost) + " per day"
		if u.AccruedCost != "" {
			cost += " · " + cell(u.AccruedCost) + " so far"
		}
		fmt.Fprintf(&b, "| Cost | %s |\n", cost)
	}
	if u.WorkerOffer != "" {
		fmt.Fprintf(&b, "| Worker offer | %s |\n", cell(u.WorkerOffer))
	}
	if u.AdoptedWorker != "" {
		fmt.Fprintf(&b, "| Worker | adopted: %s |\n", cell(u.AdoptedWorker))
	}
	if u.Path != "" {
		fmt.Fprintf(&b, "| Path | %s |\n", cell(u.Path))
	}
	fmt.Fprintf(&b, "| Expires | %s |\n", expiryCell(u.Expires, now, u.Keep, u.KeepLabel))
	fmt.Fprintf(&b, "| Admin access from | %s |\n", codeList(orDefault(u.AdminCIDRs)))
	b.WriteString("\n")
	if u.KeepIgnored != nil {
		b.WriteString(u.KeepIgnored.note(u.KeepLabel) + "\n")
	}
	if w := worldWarningFor(u.AdminCIDRs); w != "" {
		b.WriteString(w + "\n")
	}
	if len(u.Changes) > 0 {
		b.WriteString(renderChanges(u.Changes) + "\n")
	}
	b.WriteString(renderKubeconfig(u.Cluster, u.Kubeconfig, now))
	b.WriteString("\n**Next:**\n\n")
	b.WriteString("```sh\nkubectl --kubeconfig kubeconfig get nodes -o wide\n```\n\n")
	b.WriteString("Push the expiry back, see what it costs, or destroy it (each on a comment line of its own):\n\n")
	b.WriteString("```\n/poc extend 4h\n```\n```\n/poc cost\n```\n```\n/poc down\n```\n")
	return b.String()
}

func orDefault(cidrs []string) []string {
	if len(cidrs) == 0 {
		return []string{"0.0.0.0/0"}
	}
	return cidrs
}

func expiryCell(exp, now time.Time, keep bool, label string) string {
	if label == "" {
		label = "poc/keep"
	}
	if keep {
		return fmt.Sprintf("paused by the `%s` label (would be %s)", label, fmtTime(exp))
	}
	s := fmtTime(exp)
	if r := relative(exp, now); r != "" {
		s += " (" + r + ")"
	}
	return s + fmt.Sprintf(" — `/poc extend 4h` pushes it back, the `%s` label pauses it", label)
}

// RenderKubeconfig is the reply to `/poc kubeconfig`, and the kubeconfig section of the final
// `up` body.
func RenderKubeconfig(cluster string, k KubeconfigAccess, now time.Time) string {
	return fit(renderKubeconfig(cluster, k, now))
}

func renderKubeconfig(cluster string, k KubeconfigAccess, now time.Time) string {
	var b strings.Builder
	b.WriteString("**Kubeconfig:** ")
	switch {
	case k.URL != "":
		keys := "your GitHub SSH keys"
		if k.Recipients == 1 {
			keys = "your GitHub SSH key"
		}
		fmt.Fprintf(&b, "encrypted with [age](https://age-encryption.org) to %s (%s), so only you can read it; the link expires %s", keys, mention(k.Login), fmtTime(k.URLExpires))
		if r := relative(k.URLExpires, now); r != "" {
			b.WriteString(" (" + r + ")")
		}
		b.WriteString(". Fetch and decrypt it with the key you use for GitHub (`~/.ssh/id_rsa` for an RSA key):\n\n")
		// The URL is ours (presigned); single quotes keep the shell from reading & and ?.
		fmt.Fprintf(&b, "```sh\ncurl -fsS '%s' | age -d -i ~/.ssh/id_ed25519 > kubeconfig\n```\n\n", strings.ReplaceAll(k.URL, "'", "%27"))
		b.WriteString("The link expired? `/poc kubeconfig` issues a new one.\n")
	case k.DeadLink != nil:
		fmt.Fprintf(&b, "not posted: the bot tried a fresh link to your encrypted kubeconfig and it answered %s, so it would not have worked for you either. "+
			"To fix (an operator of this bot): %s. Then comment:\n\n```\n/poc kubeconfig\n```\n", cellText(k.DeadLink.Answer, 4*maxCellBytes), cellText(k.DeadLink.Fix, 4*maxCellBytes))
	case k.Renamed != nil:
		b.WriteString(k.Renamed.note(k.Login))
	case k.NoKeys:
		if len(k.Unusable) > 0 {
			fmt.Fprintf(&b, "not issued: none of %s's public SSH keys on GitHub can encrypt it (%s), and the kubeconfig is only ever handed out encrypted to one. "+
				"[age](https://age-encryption.org) encrypts to %s keys only. "+
				"Add one at https://github.com/settings/ssh/new, then comment:\n\n```\n/poc kubeconfig\n```\n", mention(k.Login), codeList(k.Unusable), UsableKeyTypes)
			break
		}
		fmt.Fprintf(&b, "not issued: %s has no public SSH key on GitHub, and the kubeconfig is only ever handed out encrypted to one. "+
			"Add a key at https://github.com/settings/ssh/new (%s), then comment:\n\n```\n/poc kubeconfig\n```\n", mention(k.Login), UsableKeyTypes)
	default:
		b.WriteString("kept in the encrypted state only.\n")
	}
	if k.OperatorCmd != "" {
		fmt.Fprintf(&b, "\nOperators holding the state key can also run `%s`.\n", k.OperatorCmd)
	}
	return b.String()
}

// RenderDown renders the result of `/poc down`.
func RenderDown(v DownView) string {
	return fit(fmt.Sprintf("### %s `/poc down` on cluster `%s`\n\n", downEmoji(v), v.Cluster) + renderDownBody(v))
}

func downEmoji(v DownView) string {
	for _, d := range v.Deleted {
		if d.Err != "" {
			return "❌"
		}
	}
	return "✅"
}

func renderDownBody(v DownView) string {
	var b strings.Builder
	failed := 0
	for _, d := range v.Deleted {
		if d.Err != "" {
			failed++
		}
	}
	switch {
	case len(v.Deleted) == 0:
		b.WriteString("Nothing to delete: no resource of this cluster exists.\n")
	case failed == 0:
		fmt.Fprintf(&b, "Deleted %d resources in %s; nothing of this cluster is left.", len(v.Deleted), FormatDuration(v.Duration))
	default:
		fmt.Fprintf(&b, "Deleted %d of %d resources; **%d could not be deleted** and still cost money. `/poc down` again retries them; the reaper retries on its next run.", len(v.Deleted)-failed, len(v.Deleted), failed)
	}
	if v.Accrued != "" && len(v.Deleted) > 0 {
		fmt.Fprintf(&b, " Total cost over its life: %s.", cell(v.Accrued))
	}
	b.WriteString("\n")
	if len(v.Deleted) == 0 {
		return b.String()
	}
	b.WriteString("\n| | kind | name | id |\n|---|---|---|---|\n")
	rows := v.Deleted
	if len(rows) > maxRows {
		// The failed rows first to stay: they are what still costs money.
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b DeletedResource) int { return boolRank(b.Err != "") - boolRank(a.Err != "") })
	}
	listed, more := elide(rows, maxRows)
	for _, d := range listed {
		mark := "🗑️"
		if d.Err != "" {
			mark = "❌"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mark, cell(cellText(d.Kind, maxCellBytes)), codeOrDash(d.Name), codeOrDash(d.ID))
	}
	b.WriteString(moreRows(more, "resources"))
	errs := 0
	for _, d := range rows {
		if d.Err == "" {
			continue
		}
		if errs++; errs > maxErrorsShown {
			continue
		}
		fmt.Fprintf(&b, "\n%s %s:\n\n%s", cell(cellText(d.Kind, maxCellBytes)), codeOrDash(d.ID), fence(shown(d.Err, maxErrorBytes/4)))
	}
	b.WriteString(moreRows(errs-maxErrorsShown, "errors"))
	return b.String()
}

// maxErrorsShown is how many resources' errors a teardown report shows in full (cut each).
const maxErrorsShown = 10

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func codeOrDash(s string) string {
	if s == "" {
		return "—"
	}
	return inlineCode(strings.ReplaceAll(clip(s, maxCellBytes), "|", "¦"))
}

// RenderCost renders the reply to `/poc cost`.
func RenderCost(v CostView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### 💶 Cost of cluster `%s`\n\n", v.Cluster)
	b.WriteString(renderCostBody(v))
	return fit(b.String())
}

func renderCostBody(v CostView) string {
	var b strings.Builder
	b.WriteString("| resource | hourly | per day | per month (730 h) | price source |\n|---|--:|--:|--:|---|\n")
	lines, more := elide(v.Lines, maxRows)
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(cellText(l.Resource, maxCellBytes)), cell(clip(l.Hourly, maxCellBytes)),
			cell(clip(l.Daily, maxCellBytes)), cell(clip(l.Monthly, maxCellBytes)), cell(cellText(l.Source, maxCellBytes)))
	}
	if more > 0 {
		fmt.Fprintf(&b, "| _… and %d more, in the total_ | | | | |\n", more)
	}
	fmt.Fprintf(&b, "| **total** | **%s** | **%s** | **%s** | |\n\n", cell(v.TotalHourly), cell(v.TotalDaily), cell(v.TotalMonthly))
	fmt.Fprintf(&b, "**Total per day: %s** (hourly prices × 24, excl. VAT).", cell(v.TotalDaily))
	if v.Accrued != "" {
		since := fmtTime(v.Created)
		if r := relative(v.Created, v.Now); r != "" {
			since += ", " + r
		}
		fmt.Fprintf(&b, " Accrued since creation (%s): **%s**.", since, cell(v.Accrued))
	}
	if v.UntilExpiry != "" {
		fmt.Fprintf(&b, " Until expiry (%s): **%s** more.", fmtTime(v.Expires), cell(v.UntilExpiry))
	}
	b.WriteString("\n")
	if len(v.Fees) > 0 {
		b.WriteString("\nOne-time fees:\n\n")
		fees, more := elide(v.Fees, maxRows)
		for _, f := range fees {
			fmt.Fprintf(&b, "- %s: %s (%s)\n", cellText(f.Name, maxCellBytes), cell(clip(f.Amount, maxCellBytes)), cellText(f.Source, maxCellBytes))
		}
		b.WriteString(moreRows(more, "fees"))
	}
	if len(v.Notes) > 0 {
		b.WriteString("\n")
		notes, more := elide(v.Notes, maxRows)
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", cellText(n, 4*maxCellBytes))
		}
		b.WriteString(moreRows(more, "notes"))
	}
	return b.String()
}

// RenderStatus renders the reply to `/poc status`.
func RenderStatus(v StatusView) string {
	var b strings.Builder
	if !v.Exists {
		fmt.Fprintf(&b, "### Cluster `%s`\n\nNo cluster exists for this issue. Create one with:\n\n```\n/poc up\n```\n", v.Cluster)
		return fit(b.String())
	}
	fmt.Fprintf(&b, "### %s Cluster `%s`: %s\n\n", v.Phase.Emoji(), v.Cluster, EscapeText(string(v.Phase)))
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Kubernetes API | %s |\n", codeList(v.APIEndpoints))
	created := fmtTime(v.Created)
	if !v.Created.IsZero() && !v.Now.IsZero() {
		created += " (age " + FormatDuration(v.Now.Sub(v.Created)) + ")"
	}
	fmt.Fprintf(&b, "| Created | %s |\n", created)
	fmt.Fprintf(&b, "| Expires | %s |\n", expiryCell(v.Expires, v.Now, v.Keep, v.KeepLabel))
	label := v.KeepLabel
	if label == "" {
		label = "poc/keep"
	}
	keep := "absent"
	if v.Keep {
		keep = "present: expiry paused"
	}
	if v.KeepIgnored != nil {
		keep = "present but ignored (see below)"
	}
	fmt.Fprintf(&b, "| `%s` label | %s |\n", label, keep)
	lock := "free"
	if l := v.Lock; l != nil {
		lock = "held by " + cell(cellText(fmt.Sprintf("run %s (%s by %s)", orDash(l.RunID), orDash(l.Command), orDash(l.Actor)), maxCellBytes))
		if !l.Since.IsZero() {
			lock += " since " + fmtTime(l.Since)
		}
	}
	fmt.Fprintf(&b, "| Lock | %s |\n", lock)
	if v.DailyCost != "" || v.Accrued != "" {
		fmt.Fprintf(&b, "| Cost | %s per day · %s accrued |\n", cell(v.DailyCost), cell(v.Accrued))
	}
	if v.Parked != "" {
		fmt.Fprintf(&b, "| Parked workers (billed) | %s |\n", cell(v.Parked))
	}
	health, moreHealth := elide(v.Health, maxRows)
	for _, h := range health {
		mark := "✅"
		if !h.OK {
			mark = "❌"
		}
		d := h.Detail
		if h.Target != "" {
			d = h.Target + ": " + d
		}
		if d != "" {
			d = " " + cell(cellText(d, maxCellBytes))
		}
		fmt.Fprintf(&b, "| %s | %s%s |\n", cell(cellText(h.Name, maxCellBytes)), mark, d)
	}
	b.WriteString(moreRows(moreHealth, "checks"))
	if v.HealthNote != "" {
		b.WriteString("\n> [!NOTE]\n> " + cellText(v.HealthNote, 4*maxCellBytes) + "\n")
	}
	if v.KeepIgnored != nil {
		b.WriteString("\n" + v.KeepIgnored.note(v.KeepLabel))
	}
	if len(v.Resources) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>Resources (%d)</summary>\n\n| kind | name | id | address | state |\n|---|---|---|---|---|\n", len(v.Resources))
		res, more := elide(v.Resources, maxRows)
		for _, r := range res {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(cellText(r.Kind, maxCellBytes)), codeOrDash(r.Name), codeOrDash(r.ID),
				codeOrDash(r.Address), cell(cellText(r.State, maxCellBytes)))
		}
		b.WriteString(moreRows(more, "resources"))
		b.WriteString("\n</details>\n")
	}
	if v.StickyURL != "" {
		fmt.Fprintf(&b, "\n[Last run's status comment](%s)\n", v.StickyURL)
	}
	return fit(b.String())
}

// RenderExpiryWarning renders the reaper's single warning before teardown.
func RenderExpiryWarning(v ExpiryWarningView) string {
	label := v.KeepLabel
	if label == "" {
		label = "poc/keep"
	}
	who := ""
	if v.Requester != "" {
		who = mention(v.Requester) + " "
	}
	s := fmt.Sprintf("⏰ %scluster `%s` expires: **tearing down at %s**", who, v.Cluster, fmtTime(v.At))
	if r := relative(v.At, v.Now); r != "" {
		s += " (" + r + ")"
	}
	s += fmt.Sprintf(" — `/poc extend 4h` or label `%s` to keep it.", label)
	if v.Accrued != "" {
		s += " It has cost " + cell(v.Accrued) + " so far."
	}
	s += "\n\n```\n/poc extend 4h\n```\n"
	if v.KeepIgnored != nil {
		s += "\n" + v.KeepIgnored.note(label)
	}
	return fit(s)
}

// RenderReaped renders the notice the reaper posts after a teardown.
func RenderReaped(v ReapedView) string {
	var why string
	switch v.Reason {
	case ReapExpired:
		why = "it expired at " + fmtTime(v.ExpiredAt)
	case ReapClosed:
		why = "this issue or pull request was closed"
	case ReapMerged:
		why = "this pull request was merged"
	default:
		why = EscapeText(string(v.Reason))
	}
	return fit(fmt.Sprintf("### 🧹 Cluster `%s` was torn down by the reaper\n\nBecause %s.\n\n", v.Down.Cluster, why) +
		renderDownBody(v.Down) + "\nA new one is a comment away:\n\n```\n/poc up\n```\n")
}

// RenderBudgetRefusal renders a refused `up`: which limit, the figures, what to do.
func RenderBudgetRefusal(v BudgetRefusalView) string {
	var b strings.Builder
	b.WriteString("😕 **Not created:** ")
	switch v.Limit {
	case LimitMaxClusters:
		fmt.Fprintf(&b, "this repository already runs %s, the most `max_clusters` allows (%s).", cell(clip(v.Current, maxCellBytes)), cell(clip(v.Max, maxCellBytes)))
	case LimitMaxDailyEUR:
		fmt.Fprintf(&b, "the running clusters cost %s and this one would add %s, over `max_daily_eur` (%s).", cell(clip(v.Current, maxCellBytes)), cell(clip(v.Requested, maxCellBytes)), cell(clip(v.Max, maxCellBytes)))
	case LimitMaxTTL:
		fmt.Fprintf(&b, "a lifetime of %s is over `max_ttl` (%s).", cell(clip(v.Requested, maxCellBytes)), cell(clip(v.Max, maxCellBytes)))
	case LimitUnknownPrice:
		b.WriteString("a compute price is unknown, and `allow_unknown_prices` is false: the bot does not start what it cannot price.")
	default:
		fmt.Fprintf(&b, "the budget limit %s was reached.", Quote(string(v.Limit)))
	}
	b.WriteString(" Nothing was created.\n")
	if v.Detail != "" {
		b.WriteString("\n" + cellText(v.Detail, 4*maxCellBytes) + "\n")
	}
	if len(v.Running) > 0 {
		b.WriteString("\nRunning now: " + codeList(v.Running) + ".\n")
	}
	b.WriteString("\nFree room with `/poc down` on a cluster you no longer need, or raise the limit in `.github/poc.yml` on the default branch.\n")
	return fit(b.String())
}

// RenderPlan renders `/poc up --dry-run`: what would be created, grouped, and what it costs.
func RenderPlan(v PlanView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### 📋 Plan for cluster `%s` (dry run: nothing created)\n\n", v.Cluster)
	n := 0
	for _, g := range v.Groups {
		n += len(g.Items)
	}
	if n == 0 && len(v.Changes) == 0 {
		b.WriteString("Nothing to do: the cluster already matches.\n\n")
	}
	for _, g := range v.Groups {
		if len(g.Items) == 0 {
			continue
		}
		fmt.Fprintf(&b, "**%s** (%d)\n\n", cellText(g.Name, maxCellBytes), len(g.Items))
		items, more := elide(g.Items, maxRows)
		for _, it := range items {
			line := "- " + cellText(it.Kind, maxCellBytes) + " " + codeOrDash(it.Name)
			if it.Detail != "" {
				line += " — " + cellText(it.Detail, maxCellBytes)
			}
			b.WriteString(line + "\n")
		}
		b.WriteString(moreRows(more, "items"))
		b.WriteString("\n")
	}
	if len(v.Changes) > 0 {
		b.WriteString(renderChanges(v.Changes) + "\n")
	}
	var meta []string
	if v.TTL > 0 {
		meta = append(meta, "lifetime "+FormatDuration(v.TTL))
	}
	if v.Talos != "" {
		meta = append(meta, "Talos "+inlineCode(v.Talos))
	}
	meta = append(meta, "admin access from "+codeList(orDefault(v.AdminCIDRs)))
	b.WriteString(strings.Join(meta, " · ") + "\n\n")
	if w := worldWarningFor(v.AdminCIDRs); w != "" {
		b.WriteString(w + "\n")
	}
	if v.Preflight != nil {
		b.WriteString(renderPreflight(*v.Preflight))
	}
	if len(v.Cost.Lines) > 0 {
		b.WriteString(renderCostBody(v.Cost))
		b.WriteString("\n")
	}
	b.WriteString("Create it with the same flags, without `--dry-run`.\n")
	return fit(b.String())
}

func renderChanges(cs []Change) string {
	var b strings.Builder
	b.WriteString("**Changes to the running cluster:**\n\n| setting | now | asked | |\n|---|---|---|---|\n")
	shown, more := elide(cs, maxRows)
	for _, c := range shown {
		what := "applied in place"
		if !c.InPlace {
			what = "❌ refused: " + cell(cellText(c.Reason, maxCellBytes))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(cellText(c.Field, maxCellBytes)), codeOrDash(c.From), codeOrDash(c.To), what)
	}
	b.WriteString(moreRows(more, "changes"))
	return b.String()
}
