// Package settings is the one definition of every value a user can set: a `/poc up` flag in a
// comment, a flag of the `bot` CLI, an environment variable of the workflow, or a key of the
// repository's `.github/poc.yml`. One Setting row names the value in each of those places, with its
// default, the rule it must follow and its help text; the comment parser (internal/commands), the
// `/poc help` reply, `bot --help` (cmd/bot), the repository configuration (internal/repoconfig),
// deploy/poc.example.yml and docs/configuration.md are all driven from the table, so that a default
// or a validation rule is written once.
//
// A setting is also bound and read once. The Spec column names the field of a cluster's spec a
// setting sets: a comment's flags and the CLI's flags (with their variables) become Values, which
// provision.Spec.Apply writes into the spec. Every variable of the table is read through Env (or
// the CLI's envFlags.Setting), by the setting's name, with the table's default and grammar; a test
// (read_test.go) fails on a POC_ or SCW_ variable read by hand anywhere in the module.
//
// The package imports nothing but the standard library: the pure packages (commands, repoconfig)
// and the low ones (provision, images) can all read it. The two generated files are rewritten by
// `go generate ./internal/settings` (or `make generate`); a test fails while they are stale.
package settings

//go:generate go run ./gen -root ../..

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a setting's value.
type Kind string

// The kinds of values.
const (
	String   Kind = "string"
	Bool     Kind = "bool"
	Int      Kind = "integer"
	Float    Kind = "number"
	Duration Kind = "duration"
	List     Kind = "list"
	EUR      Kind = "euros"
	Map      Kind = "mapping" // KEY: N pairs (quotas:)
)

// Setting is one user-settable value. Empty name fields mean "not settable there".
type Setting struct {
	Name    string // the canonical name, e.g. "ttl"
	Comment string // flag of `/poc up` without dashes, e.g. "ttl"
	CLI     string // flag of `bot up` (or the command named in CLICommand) without dashes
	// CLICommand is the bot subcommand whose flag CLI is ("up" when empty).
	CLICommand string
	Env        string // environment variable of the workflow, e.g. "POC_TTL"
	RepoKey    string // key of .github/poc.yml, e.g. "default_ttl"
	Kind       Kind
	Default    string // the default as a user writes it; "" for none
	Arg        string // placeholder in synopses, e.g. "DURATION"
	Rule       string // the validation, in words
	Help       string // one line
	Secret     bool   // a secret: set it as a GitHub secret, never a variable
	// Check validates one value (one element of a list) as the user wrote it; nil accepts any.
	Check func(string) error
	// Spec is the field of a cluster's spec (provision.Spec, by its JSON name) the setting sets:
	// the one binding of the comment's flag, the CLI's flag and its variable to the cluster
	// (Values, provision.Spec.Apply). Empty: not a field of the spec (ttl is the intent's).
	Spec string
}

// Pinned defaults that other packages reuse as typed values; the table's Default column is
// printed from them, so each is written once.
const (
	// DefaultTalosVersion is the Talos release a cluster gets without --talos (docs/seed.md, Talos configuration).
	DefaultTalosVersion = "v1.13.11"
	// MaxTalosMinor is the newest Talos series the pinned machinery library (v1.14.1) can generate
	// configs for; internal/provision/talos tests keep the two in step.
	MaxTalosMinor = "v1.14"

	DefaultTTL         = 8 * time.Hour
	DefaultMinTTL      = time.Hour
	DefaultMaxTTL      = 7 * 24 * time.Hour
	DefaultWarnBefore  = time.Hour
	DefaultCPCount     = 3
	DefaultCPType      = "PLAY2-NANO"
	DefaultWorkerOffer = "EM-A116X-SSD"
	DefaultZone        = "fr-par-1"
	DefaultAdminCIDR   = "0.0.0.0/0"
	DefaultMaxClusters = 3
	// DefaultMaxDailyNanoEUR is 15 €: three default clusters at ≈ 4.30 €/day fit.
	DefaultMaxDailyNanoEUR int64 = 15 * 1_000_000_000
	DefaultPullRequests          = "label"
	DefaultPRLabel               = "poc"
	DefaultKeepLabel             = "poc/keep"
	DefaultImageFactoryURL       = "https://factory.talos.dev"
	// DefaultRegistryProbeURLs are where the nodes pull from at bootstrap: the installer (the
	// Image Factory's registry), the Talos images (ghcr.io), the Kubernetes ones
	// (registry.k8s.io), Cilium's (quay.io).
	DefaultRegistryProbeURLs = "https://factory.talos.dev,https://ghcr.io,https://registry.k8s.io,https://quay.io"
	// DefaultCiliumChart is Cilium 1.18.1's chart archive pinned by its SHA-256 (provision/talos
	// cilium.go says where the digest comes from): the bot renders it into the control planes'
	// inline manifest.
	DefaultCiliumChart = "https://helm.cilium.io/cilium-1.18.1.tgz@sha256:36aa882be2a35ac69f708f6e62e1e1f975ff48c561ce079d35ad35718284af22"
	// DefaultRunnerEchoURL answers a GET with the caller's address (runner detection).
	DefaultRunnerEchoURL = "https://checkip.amazonaws.com"

	// DefaultLockLease and DefaultLockWait are lock-lease and lock-wait: the cluster lock's lease
	// and how long a run waits for a lock another run holds.
	DefaultLockLease = 2 * time.Minute
	DefaultLockWait  = 10 * time.Minute

	// DefaultStickyInterval is sticky-interval: the least time between two edits of a status
	// comment (GitHub's secondary limits count content writes; internal/chatops/progress.go).
	DefaultStickyInterval = 3 * time.Second
	// DefaultRequestWait is request-wait, and DefaultRequestPoll how often such a wait reads the
	// state meanwhile.
	DefaultRequestWait = 30 * time.Minute
	DefaultRequestPoll = 5 * time.Second
	// DefaultLinkTTL is the lifetime of a presigned kubeconfig link.
	DefaultLinkTTL = time.Hour
	// DefaultCancelWait bounds a down's wait for the run it asked to stop: the longest modeled
	// up, with room.
	DefaultCancelWait = 50 * time.Minute
)

// The quota keys of products, as `quotas:` writes them; an Instance commercial type ("PLAY2-NANO")
// and an Elastic Metal offer ("EM-A116X-SSD") are keys of their own.
const (
	QuotaKeyIPs            = "ips"
	QuotaKeyVolumes        = "volumes"
	QuotaKeySnapshots      = "snapshots"
	QuotaKeySecurityGroups = "security_groups"
	QuotaKeySSHKeys        = "ssh_keys"
	// MaxQuota bounds a number of quotas:.
	MaxQuota = 100000
)

// QuotaProductKeys are the keys of products, in the order the pre-flight shows them.
var QuotaProductKeys = []string{QuotaKeyIPs, QuotaKeyVolumes, QuotaKeySecurityGroups, QuotaKeySnapshots, QuotaKeySSHKeys}

// CheckQuotaKey accepts a key of `quotas:`: a product key, or an Instance type or Elastic Metal
// offer name (upper case letters, digits and dashes).
func CheckQuotaKey(key string) error {
	for _, k := range QuotaProductKeys {
		if key == k {
			return nil
		}
	}
	ok := key != "" && len(key) <= 40
	for _, r := range key {
		ok = ok && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	}
	if !ok {
		return fmt.Errorf("%q: give an Instance type (PLAY2-NANO), an Elastic Metal offer (EM-A116X-SSD) or one of %s", key, strings.Join(QuotaProductKeys, ", "))
	}
	return nil
}

// ServiceAccountKey is the type of the key that signs a new cluster's Kubernetes service-account
// tokens (Talos machinery v1.14.1, config/generate/secrets/bundle.go: RSA by default since Talos
// 1.7, ECDSA with WithECDSAServiceAccountKey).
type ServiceAccountKey string

// The service-account key types.
const (
	// ServiceAccountKeyRSA is Talos's default: external systems that verify the cluster's tokens
	// (AWS IAM roles for service accounts, for one) accept RSA signatures only.
	ServiceAccountKeyRSA ServiceAccountKey = "rsa"
	// ServiceAccountKeyECDSA is generated in about a millisecond, where an RSA-4096 key takes
	// from a few hundred milliseconds to seconds of CPU; Talos and Kubernetes accept both.
	ServiceAccountKeyECDSA ServiceAccountKey = "ecdsa"

	DefaultServiceAccountKey = ServiceAccountKeyRSA
)

// CheckServiceAccountKey accepts rsa or ecdsa.
func CheckServiceAccountKey(v string) error {
	switch ServiceAccountKey(v) {
	case ServiceAccountKeyRSA, ServiceAccountKeyECDSA:
		return nil
	}
	return fmt.Errorf("%q: give rsa or ecdsa", v)
}

var (
	// talosVersionRE is the one pattern of a Talos release tag: vX.Y.Z, optionally a pre-release
	// (-alpha.N, -beta.N, -rc.N) as siderolabs tags them.
	talosVersionRE = regexp.MustCompile(`^v(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})(-(alpha|beta|rc)\.[0-9]{1,3})?$`)
	// extensionRE: an Image Factory official extension, "name" or "org/name" (lower case).
	extensionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)?$`)
	offerRE     = regexp.MustCompile(`^[A-Z0-9]+(-[A-Z0-9]+)*$`)
	labelRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// NormalizeTalosVersion accepts a Talos release tag with or without its leading "v" and returns
// it with the "v"; the error says what a version looks like.
func NormalizeTalosVersion(v string) (string, error) {
	n := "v" + strings.TrimPrefix(v, "v")
	if !talosVersionRE.MatchString(n) {
		return "", fmt.Errorf("%q is not a Talos release like %s (or a pre-release like v1.14.0-rc.1)", v, DefaultTalosVersion)
	}
	return n, nil
}

// CheckTalosVersion accepts exactly a tag such as v1.13.11 or v1.14.0-rc.1 (with its "v").
func CheckTalosVersion(v string) error {
	n, err := NormalizeTalosVersion(v)
	if err == nil && n != v {
		err = fmt.Errorf("%q: write the release tag with its leading v: %s", v, n)
	}
	return err
}

// CheckExtension accepts an Image Factory official extension name such as siderolabs/iscsi-tools.
func CheckExtension(e string) error {
	if len(e) > 100 || !extensionRE.MatchString(e) {
		return fmt.Errorf("%q is not an extension name like siderolabs/iscsi-tools (lower-case letters, digits, '.', '_', '-', at most one '/')", e)
	}
	return nil
}

// CheckOffer accepts a Scaleway offer or Instance type name (upper case, e.g. PLAY2-NANO).
func CheckOffer(t string) error {
	if len(t) > 40 || !offerRE.MatchString(t) {
		return fmt.Errorf("%q is not a Scaleway offer name like PLAY2-NANO or EM-A116X-SSD", t)
	}
	return nil
}

// CheckDNSZone accepts a domain of at least two labels (lower case, no trailing dot).
func CheckDNSZone(z string) error {
	if len(z) > 253 {
		return errors.New("longer than 253 characters")
	}
	labels := strings.Split(z, ".")
	if len(labels) < 2 {
		return errors.New("give a domain with at least two labels, e.g. example.com")
	}
	for _, l := range labels {
		if !labelRE.MatchString(l) {
			return errors.New("each label is letters, digits and inner hyphens, 1 to 63 characters")
		}
	}
	return nil
}

// DefaultPoolMaxAge is pool.max_age's default: a spare is replaced once a day.
const DefaultPoolMaxAge = 24 * time.Hour

// PoolCheckEvery is how often the schedule re-checks a ready spare's health (spare.PlanInput's
// CheckEvery). A claim re-checks the spare it takes anyway, so this check does not guard a
// hand-out: it finds a spare that died while waiting, so that the schedule replaces it before a
// claim would fall to the cold path for it. Every other pass of the hourly schedule: a dead spare
// waits at most about three hours, and the check (a few seconds, the security group opened to the
// runner when admin_cidrs leave it out) runs half as often as the passes.
const PoolCheckEvery = 2 * time.Hour

// MaxPoolSize bounds pool.size: each spare is a whole cluster (three control planes and an
// Elastic Metal server), and the organization's default quotas fit one.
const MaxPoolSize = 5

// CheckPoolSize accepts 0 to MaxPoolSize.
func CheckPoolSize(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > MaxPoolSize {
		return fmt.Errorf("%q: give a number of spares from 0 (no pool) to %d", v, MaxPoolSize)
	}
	return nil
}

// CheckCPCount accepts 1, 3 or 5.
func CheckCPCount(v string) error {
	switch v {
	case "1", "3", "5":
		return nil
	}
	return fmt.Errorf("%q: give 1, 3 or 5 (etcd needs an odd quorum)", v)
}

// Table is every setting, in documentation order: the `/poc up` flags first, then the
// repository's `.github/poc.yml`, then what only the workflow sets.
var Table = []Setting{
	// /poc up, bot up
	{Name: "ttl", Comment: "ttl", CLI: "ttl", Env: "POC_TTL", RepoKey: "default_ttl", Kind: Duration, Default: FormatDuration(DefaultTTL), Arg: "DURATION",
		Rule: "within [min_ttl, max_ttl]; Go durations plus days (90m, 8h, 2d)", Help: "lifetime of a new cluster; the bot tears it down after"},
	{Name: "dry-run", Comment: "dry-run", CLI: "dry-run", Kind: Bool, Default: "false",
		Help: "show the plan and its cost; create nothing"},
	{Name: "cold", Comment: "cold", CLI: "cold", Kind: Bool, Default: "false",
		Help: "build a new cluster even when the warm pool has a spare that fits (pool:)"},
	{Name: "talos", Spec: "talos_version", Comment: "talos", CLI: "talos", Env: "POC_TALOS_VERSION", Kind: String, Default: DefaultTalosVersion, Arg: "vX.Y.Z",
		Rule: "a Talos release tag (v1.14.0-rc.1 form allowed), series " + MaxTalosMinor + " or older, 1.12 or newer", Help: "Talos version of the nodes", Check: CheckTalosVersion},
	{Name: "admin-cidr", Spec: "admin_cidrs", Comment: "admin-cidr", CLI: "admin-cidr", Env: "POC_ADMIN_CIDRS", Kind: List, Default: DefaultAdminCIDR, Arg: "CIDR …",
		Rule: "IPv4 CIDRs without host bits (an address means /32); at most 16", Help: "who may reach the Kubernetes (6443) and Talos (50000) APIs; repeat it or separate with commas"},
	{Name: "extensions", Spec: "talos_extensions", Comment: "extensions", CLI: "extension", Env: "POC_TALOS_EXTENSIONS", Kind: List, Arg: "a,b",
		Rule: "Image Factory official extension names; at most 16", Help: "Talos system extensions, e.g. siderolabs/iscsi-tools", Check: CheckExtension},
	{Name: "dns-zone", Spec: "dns_zone", Comment: "dns-zone", CLI: "dns-zone", Env: "POC_DNS_ZONE", Kind: String, Arg: "ZONE",
		Rule: "a zone listed under dns_zones", Help: "create k8s-poc.CLUSTER.ZONE (API) and edge.CLUSTER.ZONE (worker) in this Scaleway DNS zone; only zones listed under dns_zones in .github/poc.yml", Check: CheckDNSZone},
	{Name: "expose-edge", Spec: "expose_edge_on_control_plane", Comment: "expose-edge", CLI: "expose-edge", Kind: Bool, Default: "false",
		Help: "also open TCP 80/443 on the control planes"},
	{Name: "cp-count", Spec: "cp_count", Comment: "cp-count", CLI: "cp-count", Kind: Int, Default: fmt.Sprint(DefaultCPCount), Arg: "N",
		Rule: "1, 3 or 5", Help: "control planes: 1, 3 or 5", Check: CheckCPCount},
	{Name: "cp-type", Spec: "cp_instance_type", Comment: "cp-type", CLI: "cp-type", Kind: String, Default: DefaultCPType, Arg: "TYPE",
		Rule: "a Scaleway Instance type name", Help: "control-plane Instance type", Check: CheckOffer},
	{Name: "worker-offer", Spec: "baremetal_offer", Comment: "worker-offer", CLI: "worker-offer", Kind: String, Default: DefaultWorkerOffer, Arg: "OFFER",
		Rule: "a Scaleway Elastic Metal offer name, billed hourly", Help: "the Elastic Metal worker's offer", Check: CheckOffer},
	{Name: "zone", Spec: "zone", CLI: "zone", Env: "SCW_DEFAULT_ZONE", Kind: String, Default: DefaultZone, Arg: "ZONE",
		Rule: "a Scaleway zone such as fr-par-1", Help: "Scaleway zone of new clusters"},
	{Name: "ssh-public-key-file", Spec: "ssh_public_key", CLI: "ssh-public-key-file", Env: "POC_SSH_PUBLIC_KEY_FILE", Kind: String, Arg: "FILE",
		Help: "a person's SSH public key, registered next to the bot's own key for the worker's rescue (operator CLI)"},

	// .github/poc.yml
	{Name: "min_ttl", RepoKey: "min_ttl", Kind: Duration, Default: FormatDuration(DefaultMinTTL), Rule: "positive; at most max_ttl", Help: "shortest --ttl a comment may ask for"},
	{Name: "max_ttl", RepoKey: "max_ttl", Kind: Duration, Default: FormatDuration(DefaultMaxTTL), Rule: "at most 366d", Help: "longest --ttl; also bounds /poc extend"},
	{Name: "warn_before", RepoKey: "warn_before", CLI: "warn-before", CLICommand: "reap", Env: "POC_WARN_BEFORE", Kind: Duration, Default: FormatDuration(DefaultWarnBefore),
		Rule: "0 or more (0: no warning)", Help: "the reaper warns once, this long before teardown"},
	{Name: "max_clusters", RepoKey: "max_clusters", CLI: "max-clusters", Env: "POC_MAX_CLUSTERS", Kind: Int, Default: fmt.Sprint(DefaultMaxClusters), Rule: "1 to 100", Help: "clusters alive at once in this repository"},
	{Name: "max_daily_eur", RepoKey: "max_daily_eur", CLI: "max-daily-eur", Env: "POC_MAX_DAILY_EUR", Kind: EUR, Default: "15", Rule: "a decimal amount, more than 0, at most 100000, 9 decimals at most",
		Help: "sum of the daily cost of the running clusters plus the new one"},
	{Name: "allow_unknown_prices", RepoKey: "allow_unknown_prices", CLI: "allow-unknown-prices", Env: "POC_ALLOW_UNKNOWN_PRICES", Kind: Bool, Default: "false", Help: "let /poc up proceed when a compute price cannot be found (else refuse)"},
	{Name: "pull_requests", RepoKey: "pull_requests", Kind: String, Default: DefaultPullRequests, Rule: "label, always or never",
		Help: "which pull requests get a cluster: those labelled pr_label, all, or none"},
	{Name: "pr_label", RepoKey: "pr_label", Kind: String, Default: DefaultPRLabel, Rule: "a GitHub label (1 to 50 printable characters)", Help: "the label that asks for a pull request's cluster"},
	{Name: "drafts", RepoKey: "drafts", Kind: Bool, Default: "false", Help: "let draft pull requests get an automatic cluster"},
	{Name: "dns_zones", RepoKey: "dns_zones", Kind: List, Rule: "domains of at least two labels; at most 50",
		Help: "the Scaleway DNS zones /poc up --dns-zone may use (none: --dns-zone is refused)", Check: CheckDNSZone},
	{Name: "worker_offers", RepoKey: "worker_offers", Kind: List, Rule: "Elastic Metal offer names billed hourly, in order; at most 5",
		Help: "the worker's offers in order of preference: /poc up takes the first in stock and within the organization's quota (none: worker-offer alone); --worker-offer on the comment wins", Check: CheckOffer},
	{Name: "quotas", RepoKey: "quotas", Kind: Map, Rule: "KEY: N, KEY an Instance type (PLAY2-NANO), an Elastic Metal offer (EM-A116X-SSD) or " +
		strings.Join(QuotaProductKeys, ", ") + "; N from 0 to 100000",
		Help:  "the organization's Scaleway quotas, weighed by the pre-flight where the API does not give them (the bot's key may not read them, or lists a quota under a name it does not recognise); unset: Scaleway's documented defaults",
		Check: CheckQuotaKey},
	{Name: "park_for", RepoKey: "park_for", CLI: "park-for", CLICommand: "down|reap", Env: "POC_PARK_FOR", Kind: Duration, Default: "0s",
		Rule: "0 (off) up to 7d", Help: "keep a torn-down cluster's Elastic Metal worker this long, its disk written again from the pinned image, so that the next /poc up of this repository adopts it; billed while parked"},
	{Name: "share_parked_workers", RepoKey: "share_parked_workers", Env: "POC_SHARE_PARKED_WORKERS", Kind: Bool, Default: "false",
		Help: "offer the workers this repository parks to the state bucket's other repositories that share theirs, and adopt theirs (every parked disk is written again from the pinned image and read back first); false: a parked worker serves this repository only"},
	{Name: "max_paused", RepoKey: "max_paused", Kind: Duration, Default: "168h0m0s", Rule: "1h up to 30d",
		Help: "how long a paused cluster is kept (its reserved IPs, state and etcd snapshot) before the reaper destroys it; its running lifetime left is given back on resume"},
	{Name: "pause_schedule", RepoKey: "pause_schedule", Kind: String, Rule: "`weekdays|daily|DAY[-DAY][,…] HH:MM-HH:MM TIMEZONE`, e.g. `weekdays 19:00-08:00 Europe/Paris`",
		Help: "when the reaper pauses this repository's clusters (weekends included for weekdays); a /poc command in the window resumes one", Check: CheckPauseSchedule},
	{Name: "service_account_key", RepoKey: "service_account_key", Kind: String, Default: string(DefaultServiceAccountKey), Rule: "rsa or ecdsa",
		Help:  "key type that signs a new cluster's service-account tokens: rsa (Talos's default; what AWS IAM roles for service accounts accept) or ecdsa (generated in a millisecond instead of up to seconds)",
		Check: CheckServiceAccountKey},
	// .github/poc.yml pool: the warm pool (internal/spare), a mapping under one key.
	{Name: "pool.size", RepoKey: "pool.size", CLI: "size", CLICommand: "pool fill", Kind: Int, Default: "0", Rule: "0 (no pool) up to 5",
		Help: "spares to keep: whole clusters built and verified ahead of any request, that /poc up claims in seconds; billed while they wait", Check: CheckPoolSize},
	{Name: "pool.hours", RepoKey: "pool.hours", Kind: String, Rule: "pause_schedule's grammar, `weekdays|daily|DAY[-DAY][,…] HH:MM-HH:MM TIMEZONE`; here weekdays means Monday to Friday",
		Help: "when the spares are kept warm (none: always); the schedule starts building before a window opens so that its first claim is warm", Check: CheckHours},
	{Name: "pool.max_age", RepoKey: "pool.max_age", Kind: Duration, Default: FormatDuration(DefaultPoolMaxAge), Rule: "1h up to 7d",
		Help: "a spare older than this is never handed out; the schedule builds its replacement, then destroys it"},
	{Name: "pool.off_hours", RepoKey: "pool.off_hours", Kind: Duration, Default: "0s", Rule: "0 up to 1d",
		Help: "outside hours, the longest a /poc up may take: the schedule keeps the cheapest of running spares, parked workers or nothing whose claim fits it (0: nothing is kept)"},
	{Name: "pool.share", RepoKey: "pool.share", Kind: Bool, Default: "false",
		Help: "offer this repository's spares to the other repositories of the state bucket that share theirs, and take theirs (off: a spare goes to the repository that built it only)"},
	{Name: "pool.talos", RepoKey: "pool.talos", Kind: String, Rule: "a Talos release tag, as --talos",
		Help: "Talos version of the spares (none: the bot's pinned one, what /poc up asks without --talos); a spare of another version is replaced", Check: CheckTalosVersion},
	{Name: "pool.extensions", RepoKey: "pool.extensions", Kind: List, Rule: "Image Factory official extension names; at most 16",
		Help: "Talos system extensions of the spares (none: none, what /poc up asks without --extensions)", Check: CheckExtension},
	{Name: "keep_label", RepoKey: "keep_label", CLI: "keep-label", CLICommand: "reap", Env: "POC_KEEP_LABEL", Kind: String, Default: DefaultKeepLabel,
		Rule: "a GitHub label (1 to 50 printable characters)", Help: "while present on the issue/PR, the cluster does not expire"},

	// Operator CLI: the schedule's bounds, the cluster lock, the cluster a command acts on.
	{Name: "cluster", CLI: "cluster", CLICommand: "status|cost|down|kubeconfig|…", Env: "POC_CLUSTER", Kind: String, Arg: "NAME",
		Help: "cluster name, e.g. acme-shop-42 (as the bot names the cluster of issue #42 of acme/shop)"},
	{Name: "lock-lease", CLI: "lock-lease", CLICommand: "up|down", Env: "POC_LOCK_LEASE", Kind: Duration, Default: DefaultLockLease.String(),
		Rule: "positive", Help: "lease of the cluster lock, renewed at a third of it; a killed run's lock is taken over once it lapses"},
	{Name: "lock-wait", CLI: "lock-wait", CLICommand: "up|down", Env: "POC_LOCK_WAIT", Kind: Duration, Default: DefaultLockWait.String(),
		Rule: "positive", Help: "how long to wait for a cluster lock another run holds"},
	{Name: "record", CLI: "record", CLICommand: "up|down|pause|resume|doctor", Env: "POC_RECORD_DIR", Kind: String, Arg: "DIR",
		Help: "write every HTTP exchange with Scaleway, Object Storage and GitHub into DIR as go-vcr cassettes, secrets removed, to attach to an issue (docs/recording.md)"},
	{Name: "schedule_interval", CLI: "schedule-interval", CLICommand: "init", Kind: Duration, Default: "1h", Rule: "at least 5m, dividing an hour or a day",
		Help: "how often the workflow's schedule runs the reaper (bot init writes the cron); each scheduled job is billed at least a minute on a private repository"},
	{Name: "reap-dry-run", CLI: "dry-run", CLICommand: "reap", Env: "POC_REAP_DRY_RUN", Kind: Bool, Default: "false",
		Help: "report what would happen; destroy, write and post nothing"},
	{Name: "reap-grace", CLI: "grace", CLICommand: "reap", Env: "POC_REAP_GRACE", Kind: Duration, Default: "1h0m0s",
		Rule: "positive", Help: "age under which tagged resources without a state document are left alone"},
	{Name: "reap-max-teardowns", CLI: "max-teardowns", CLICommand: "reap", Env: "POC_REAP_MAX_TEARDOWNS", Kind: Int, Default: "0",
		Rule: "0 or more", Help: "most teardowns and orphan sweeps in one run (0: no bound)"},
	{Name: "reap-budget", CLI: "budget", CLICommand: "reap", Env: "POC_REAP_BUDGET", Kind: Duration, Default: "0s",
		Rule: "0 or more", Help: "wall-time bound of the run; nothing starts after it (0: none)"},
	{Name: "reap-no-orphans", CLI: "no-orphans", CLICommand: "reap", Env: "POC_REAP_NO_ORPHANS", Kind: Bool, Default: "false",
		Help: "skip the orphan pass"},
	{Name: "kubeconfig-expires", CLI: "expires", CLICommand: "kubeconfig", Kind: Duration, Arg: "DURATION", Rule: "1m or more; never past the cluster's expiry",
		Help: "write a kubeconfig whose client certificate (a new key, made here) expires after this, instead of the cluster's admin kubeconfig"},

	// A pull request's job asking for its kubeconfig (the Action's `command: kubeconfig`).
	{Name: "request-expires", CLI: "expires", CLICommand: "request-kubeconfig", Env: "POC_KUBECONFIG_EXPIRES", Kind: Duration, Default: "1h0m0s",
		Arg: "DURATION", Rule: "1m to 6h; never past the cluster's expiry", Help: "lifetime of the job's client certificate"},
	{Name: "request-timeout", CLI: "timeout", CLICommand: "request-kubeconfig", Env: "POC_KUBECONFIG_TIMEOUT", Kind: Duration, Default: "30m0s",
		Arg: "DURATION", Rule: "positive", Help: "how long the job waits for its kubeconfig (a cluster being made takes about 12 minutes)"},

	// The emulated world's commands (the sim build: make demo, make soak).
	{Name: "demo-time-factor", CLI: "time-factor", CLICommand: "demo", Env: "POC_DEMO_TIME_FACTOR", Kind: Float, Default: "0.005",
		Help: "scale of the emulated latencies (1 = real Scaleway timings)"},
	{Name: "demo-s3", CLI: "s3", CLICommand: "demo", Env: "POC_DEMO_S3", Kind: String, Default: "auto",
		Help: "bucket backend: auto (versitygw when installed), versitygw or file"},
	{Name: "soak-duration", CLI: "duration", CLICommand: "soak", Env: "POC_SOAK_DURATION", Kind: Duration, Default: "2m",
		Help: "how long to run new random histories"},
	{Name: "soak-seed", CLI: "seed", CLICommand: "soak", Env: "POC_SOAK_SEED", Kind: String, Arg: "SEED",
		Help: "replay the history of this seed only (as printed by a failing soak)"},
	{Name: "soak-keep", CLI: "keep", CLICommand: "soak", Env: "POC_SOAK_KEEP", Kind: String, Arg: "I,J,…",
		Help: "with --seed: play only these events (comma-separated indices; the shrunk history)"},
	{Name: "soak-events", CLI: "events", CLICommand: "soak", Env: "POC_SOAK_EVENTS", Kind: Int, Default: "50",
		Help: "events per history"},
	{Name: "soak-time-factor", CLI: "time-factor", CLICommand: "soak", Env: "POC_SOAK_TIME_FACTOR", Kind: Float, Default: "0.001",
		Help: "scale of the emulated latencies"},
	{Name: "soak-parallel", CLI: "parallel", CLICommand: "soak", Env: "POC_SOAK_PARALLEL", Kind: Int,
		Help: "histories at once, each in its own world"}, // its default, 8 per CPU, is soak.go's
	{Name: "soak-no-pool", CLI: "no-pool", CLICommand: "soak", Env: "POC_SOAK_NO_POOL", Kind: Bool, Default: "false",
		Help: "histories without the warm pool's scenes (acme/c): the other repositories' events are the same"},

	// The workflow's environment only.
	{Name: "app-id", Env: "POC_APP_ID", Kind: String, Help: "the GitHub App's id (a repository variable; `bot app create` prints it)"},
	{Name: "app-private-key", Env: "POC_APP_PRIVATE_KEY", Kind: String, Secret: true, Help: "the GitHub App's private key, PEM"},
	{Name: "app-private-key-file", Env: "POC_APP_PRIVATE_KEY_FILE", Kind: String, Help: "a file holding the App's private key, instead of POC_APP_PRIVATE_KEY (operator CLI)"},
	{Name: "app-slug", Env: "POC_APP_SLUG", Kind: String, Help: "the App's slug, to recognise its own comments (default: asked from GitHub)"},
	{Name: "state-url", Env: "POC_STATE_URL", Kind: String, Help: "bucket of the encrypted state, e.g. s3://acme-poc-state?region=fr-par&endpoint=https://s3.fr-par.scw.cloud or file:///abs/dir"},
	{Name: "state-key", Env: "POC_STATE_KEY", Kind: String, Secret: true, Help: "key that encrypts the state: base64key://<32 bytes, URL-safe base64>"},
	{Name: "presign-access-key", Env: "POC_PRESIGN_ACCESS_KEY", Kind: String, Help: "a read-only Object Storage key that signs the kubeconfig links (optional; the main key otherwise)"},
	{Name: "presign-secret-key", Env: "POC_PRESIGN_SECRET_KEY", Kind: String, Secret: true, Help: "its secret"},
	{Name: "image-bucket", Env: "POC_IMAGE_BUCKET", Kind: String, Help: "Object Storage bucket of the shared Talos images: a bucket name, or a gocloud URL (s3://…, file:///…)"},
	{Name: "image-factory-url", Env: "POC_IMAGE_FACTORY_URL", Kind: String, Default: DefaultImageFactoryURL, Help: "Talos Image Factory base URL"},
	{Name: "cilium-chart", Env: "POC_CILIUM_CHART", Kind: String, Default: DefaultCiliumChart,
		Help: "Cilium chart archive pinned by digest (URL@sha256:HEX), fetched once into the image bucket and rendered into the control planes' config"},
	{Name: "rescue-ssh-port", Env: "POC_RESCUE_SSH_PORT", Kind: Int, Default: "22", Help: "SSH port of the worker's rescue system"},
	{Name: "poll-interval", Env: "POC_POLL_INTERVAL", Kind: Duration, Help: "interval between polls of a resource's state (default: the engine's)"},
	{Name: "registry-probe-urls", Env: "POC_REGISTRY_PROBE_URLS", Kind: List, Default: DefaultRegistryProbeURLs,
		Help: "the registries `bot doctor --live` reaches, comma-separated: those the nodes pull from at bootstrap (Talos, Kubernetes, Cilium images)"},
	{Name: "runner-cidr", Env: "POC_RUNNER_CIDR", Kind: String, Help: "the runner's address as a CIDR, let through to the APIs during the run (default: detected from runner-echo-url)"},
	{Name: "runner-echo-url", Env: "POC_RUNNER_ECHO_URL", Kind: String, Default: DefaultRunnerEchoURL, Help: "HTTPS endpoint that answers with the caller's address, to detect the runner's when runner-cidr is unset"},
	{Name: "read-runner-access", Env: "POC_READ_RUNNER_ACCESS", Kind: Bool, Default: "true",
		Help: "let the commands that read a cluster's nodes (/poc status, bot status, bot machineconfig) admit this runner to the control planes' security group for their run when admin_cidrs leave it out, as the commands that change a cluster do; false: they fail at once, naming admin_cidrs"},
	{Name: "sticky-interval", Env: "POC_STICKY_INTERVAL", Kind: Duration, Default: DefaultStickyInterval.String(), Help: "least time between two edits of the live status comment"},
	{Name: "reap-on-events", Env: "POC_REAP_ON_EVENTS", Kind: Bool, Default: "true", Help: "also run the reaper after each event's command (false: only on the schedule)"},
	{Name: "oidc-issuer", Env: "POC_OIDC_ISSUER", Kind: String, Help: "issuer of the Actions OIDC tokens a pull request's kubeconfig request must carry (default: GitHub.com's, https://token.actions.githubusercontent.com, or https://HOST/_services/token under GitHub Enterprise Server)"},
	{Name: "request-wait", Env: "POC_REQUEST_WAIT", Kind: Duration, Default: DefaultRequestWait.String(), Help: "how long the bot's run answering a kubeconfig request waits for a cluster another run is making"},
	{Name: "debug", Env: "POC_DEBUG", Kind: String, Help: "any value: debug logs"},
	{Name: "scw-access-key", Env: "SCW_ACCESS_KEY", Kind: String, Help: "Scaleway API access key (also the Object Storage access key)"},
	{Name: "scw-secret-key", Env: "SCW_SECRET_KEY", Kind: String, Secret: true, Help: "Scaleway API secret key"},
	{Name: "scw-project", Env: "SCW_DEFAULT_PROJECT_ID", Kind: String, Help: "Scaleway project the resources go to"},
	{Name: "scw-organization", Env: "SCW_DEFAULT_ORGANIZATION_ID", Kind: String, Help: "Scaleway organization (optional)"},
	{Name: "scw-region", Env: "SCW_DEFAULT_REGION", Kind: String, Default: "fr-par", Help: "Scaleway region of Object Storage"},
	{Name: "scw-api-url", Env: "SCW_API_URL", Kind: String, Default: "https://api.scaleway.com", Help: "Scaleway API URL (the emulator's under bot sim)"},
}

// Lookup returns the setting called name; it panics on an unknown name, a programming error the
// tests catch.
func Lookup(name string) Setting {
	for _, s := range Table {
		if s.Name == name {
			return s
		}
	}
	panic("settings: no setting " + name)
}

// ByEnv returns the setting read from the environment variable env.
func ByEnv(env string) (Setting, bool) {
	for _, s := range Table {
		if s.Env == env {
			return s, true
		}
	}
	return Setting{}, false
}

// CommentFlags returns the settings a `/poc up` comment may set, in table order.
func CommentFlags() []Setting { return filter(func(s Setting) bool { return s.Comment != "" }) }

// RepoKeys returns the settings of .github/poc.yml, in table order.
func RepoKeys() []Setting { return filter(func(s Setting) bool { return s.RepoKey != "" }) }

// EnvOnly returns the settings only the workflow's environment sets.
func EnvOnly() []Setting {
	return filter(func(s Setting) bool { return s.Env != "" && s.Comment == "" && s.RepoKey == "" && s.CLI == "" })
}

func filter(keep func(Setting) bool) []Setting {
	var out []Setting
	for _, s := range Table {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// FormatDuration prints a duration the way every parser of durations here reads it, with days:
// "7d", "1d12h", "8h", "1h30m", "90ms" (the one formatter; repoconfig's delegates to it).
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		sym  string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.sym)
			d -= n * u.unit
		}
	}
	if d > 0 {
		b.WriteString(d.String()) // seconds and below, Go's own notation
	}
	return b.String()
}
