// Package repoconfig owns the repository configuration `.github/poc.yml`:
// its type, its defaults and its strict parser. The bot reads the file from
// the repository's default branch, never from a pull request's head, so that
// a pull request cannot raise its own budget; this package only parses bytes.
//
// It depends on nothing but a YAML decoder and the settings table (keys,
// defaults), so that cost (the budget check), clusterops (the bounds of an
// intent) and chatops can use it without I/O; amounts are held as integer
// nano-euros, like internal/cost's Money.
package repoconfig

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/internal/settings"
)

// Path is where the configuration lives in a repository.
const Path = ".github/poc.yml"

// PRMode says when a pull request gets its own cluster.
type PRMode string

// Pull request modes.
const (
	PRLabel  PRMode = "label"  // when the PR carries PRLabel (default)
	PRAlways PRMode = "always" // every PR
	PRNever  PRMode = "never"  // none
)

// RepoConfig is the parsed `.github/poc.yml`. Every field has a default
// (see Default); a key absent from the file keeps it.
type RepoConfig struct {
	// MaxClusters is the most clusters alive at once in the repository
	// (default 3).
	MaxClusters int
	// MaxDailyNanoEUR caps the summed daily cost of running clusters plus
	// the new one, in nano-euros (max_daily_eur, default 15 €: three
	// default clusters at ≈ 4.30 €/day fit).
	MaxDailyNanoEUR int64
	// DefaultTTL, MinTTL and MaxTTL bound a cluster's lifetime
	// (defaults 8h, 1h, 7d); `/poc up --ttl` and `/poc extend` must stay
	// within [MinTTL, MaxTTL].
	DefaultTTL, MinTTL, MaxTTL time.Duration
	// WarnBefore is how long before expiry the issue is warned (default 1h;
	// 0 disables the warning).
	WarnBefore time.Duration
	// PullRequests: label (default), always or never.
	PullRequests PRMode
	// PRLabel is the label that asks for a PR cluster in label mode
	// (default "poc").
	PRLabel string
	// Drafts lets draft PRs get clusters (default false).
	Drafts bool
	// KeepLabel exempts a cluster from expiry while present (default
	// "poc/keep"); the reaper still destroys it when the issue/PR closes.
	KeepLabel string
	// AllowUnknownPrices lets `up` proceed when a compute item's price is
	// unknown (default false: refuse rather than count it as free).
	AllowUnknownPrices bool
	// DNSZones are the Scaleway DNS zones `/poc up --dns-zone` may use
	// (dns_zones; default none, so --dns-zone is refused): a write user of
	// the repository must not be able to add records to any zone the bot's
	// API key can reach. Lowercase, without a trailing dot.
	DNSZones []string
	// WorkerOffers are the Elastic Metal offers the worker may take, in order (worker_offers;
	// default none: the spec's offer alone). The up's pre-flight takes the first one in stock and
	// within its quota.
	WorkerOffers []string
	// Quotas are the organization's Scaleway quotas by key (quotas:; an Instance type, an Elastic
	// Metal offer or a product key of settings.QuotaProductKeys): the numbers the up's pre-flight
	// weighs where the API does not give them. Default none: Scaleway's documented defaults.
	Quotas map[string]int
	// ParkFor keeps a torn-down cluster's Elastic Metal worker, reset, in the state bucket's
	// pool for that long so that the next `up` adopts it (park_for; default 0: deleted). A
	// parked worker is billed.
	ParkFor time.Duration
	// ShareParkedWorkers offers the workers this repository parks to the bucket's other
	// repositories that share theirs, and lets its ups adopt theirs (share_parked_workers;
	// default false: a parked worker serves its own repository only).
	ShareParkedWorkers bool
	// MaxPaused bounds how long a paused cluster is kept (max_paused; default 7d).
	MaxPaused time.Duration
	// PauseSchedule is when the reaper pauses the repository's clusters (pause_schedule; nil: never).
	PauseSchedule *settings.PauseSchedule
	// ServiceAccountKey is the key type of new clusters' service-account signing key
	// (service_account_key; default rsa). An existing cluster keeps the key it was created with.
	ServiceAccountKey settings.ServiceAccountKey
}

// Default is the configuration of a repository without `.github/poc.yml`: the defaults of the
// settings table (internal/settings), which also writes deploy/poc.example.yml.
func Default() RepoConfig {
	return RepoConfig{
		MaxClusters:     settings.DefaultMaxClusters,
		MaxDailyNanoEUR: settings.DefaultMaxDailyNanoEUR,
		DefaultTTL:      settings.DefaultTTL,
		MinTTL:          settings.DefaultMinTTL,
		MaxTTL:          settings.DefaultMaxTTL,
		WarnBefore:      settings.DefaultWarnBefore,
		PullRequests:    PRMode(settings.DefaultPullRequests),
		PRLabel:         settings.DefaultPRLabel,
		KeepLabel:       settings.DefaultKeepLabel,
		MaxPaused:       settings.DefaultMaxPaused,

		ServiceAccountKey: settings.DefaultServiceAccountKey,
	}
}

// file is the YAML shape; pointers tell "absent" from "zero".
type file struct {
	MaxClusters        *int           `yaml:"max_clusters"`
	MaxDailyEUR        *raw           `yaml:"max_daily_eur"`
	MaxTTL             *raw           `yaml:"max_ttl"`
	DefaultTTL         *raw           `yaml:"default_ttl"`
	MinTTL             *raw           `yaml:"min_ttl"`
	WarnBefore         *raw           `yaml:"warn_before"`
	PullRequests       *string        `yaml:"pull_requests"`
	PRLabel            *string        `yaml:"pr_label"`
	Drafts             *bool          `yaml:"drafts"`
	KeepLabel          *string        `yaml:"keep_label"`
	AllowUnknownPrices *bool          `yaml:"allow_unknown_prices"`
	DNSZones           []string       `yaml:"dns_zones"`
	WorkerOffers       []string       `yaml:"worker_offers"`
	Quotas             map[string]int `yaml:"quotas"`
	ParkFor            *raw           `yaml:"park_for"`
	ShareParkedWorkers *bool          `yaml:"share_parked_workers"`
	MaxPaused          *raw           `yaml:"max_paused"`
	PauseSchedule      *string        `yaml:"pause_schedule"`
	ServiceAccountKey  *string        `yaml:"service_account_key"`
}

// raw keeps a scalar's source text: amounts are parsed as exact decimals,
// never through a float, and durations accept "3d".
type raw string

func (r *raw) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	*r = raw(s)
	return nil
}

// Keys lists the keys the file may contain, in documentation order (the settings table's).
func Keys() []string {
	var keys []string
	for _, s := range settings.RepoKeys() {
		keys = append(keys, s.RepoKey)
	}
	return keys
}

// maxFileSize bounds what is parsed: the file is small by nature.
const maxFileSize = 64 << 10

// Parse reads `.github/poc.yml`. Empty input (or only comments) gives
// Default(). Unknown keys, wrong types, duplicate keys and inconsistent
// values are errors naming the key and what is expected.
func Parse(data []byte) (RepoConfig, error) {
	cfg := Default()
	if len(data) > maxFileSize {
		return cfg, fmt.Errorf("%s: %d bytes, more than the %d accepted", Path, len(data), maxFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	var top any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return cfg, fmt.Errorf("%s is not valid YAML: %w", Path, err)
	}
	if top == nil {
		return cfg, nil
	}
	m, ok := top.(map[any]any)
	if !ok {
		return cfg, fmt.Errorf("%s must be a mapping of settings (keys: %s), got a %T", Path, strings.Join(Keys(), ", "), top)
	}
	known := Keys()
	var unknown []string
	for k := range m {
		ks, ok := k.(string)
		if !ok || !slices.Contains(known, ks) {
			unknown = append(unknown, fmt.Sprintf("%q", fmt.Sprint(k)))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return cfg, fmt.Errorf("%s: unknown key %s (known keys: %s)", Path, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	if z, ok := m["worker_offers"]; ok && z != nil {
		if _, isList := z.([]any); !isList {
			return cfg, fmt.Errorf("%s: worker_offers: give a list of offers, like [EM-A116X-SSD, EM-B112X-SSD], got %q", Path, fmt.Sprint(z))
		}
	}
	if z, ok := m["quotas"]; ok && z != nil {
		if _, isMap := z.(map[any]any); !isMap {
			return cfg, fmt.Errorf("%s: quotas: give a mapping of quotas, like {PLAY2-NANO: 10, ips: 50}, got %q", Path, fmt.Sprint(z))
		}
	}
	if z, ok := m["dns_zones"]; ok && z != nil {
		if _, isList := z.([]any); !isList {
			return cfg, fmt.Errorf("%s: dns_zones: give a list of zones, like [poc.example.com], got %q", Path, fmt.Sprint(z))
		}
	}
	var f file
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return cfg, fmt.Errorf("%s: %w", Path, err)
	}
	if err := f.apply(&cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", Path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", Path, err)
	}
	return cfg, nil
}

func (f file) apply(c *RepoConfig) error {
	if f.MaxClusters != nil {
		c.MaxClusters = *f.MaxClusters
	}
	if f.MaxDailyEUR != nil {
		n, err := ParseEUR(string(*f.MaxDailyEUR))
		if err != nil {
			return fmt.Errorf("max_daily_eur: %w", err)
		}
		c.MaxDailyNanoEUR = n
	}
	for _, d := range []struct {
		key string
		v   *raw
		dst *time.Duration
	}{{"max_ttl", f.MaxTTL, &c.MaxTTL}, {"default_ttl", f.DefaultTTL, &c.DefaultTTL}, {"min_ttl", f.MinTTL, &c.MinTTL}, {"warn_before", f.WarnBefore, &c.WarnBefore}, {"park_for", f.ParkFor, &c.ParkFor}, {"max_paused", f.MaxPaused, &c.MaxPaused}} {
		if d.v == nil {
			continue
		}
		v, err := ParseDuration(string(*d.v))
		if err != nil {
			return fmt.Errorf("%s: %w", d.key, err)
		}
		*d.dst = v
	}
	if f.PullRequests != nil {
		c.PullRequests = PRMode(*f.PullRequests)
	}
	if f.PRLabel != nil {
		c.PRLabel = *f.PRLabel
	}
	if f.Drafts != nil {
		c.Drafts = *f.Drafts
	}
	if f.PauseSchedule != nil && strings.TrimSpace(*f.PauseSchedule) != "" {
		ps, err := settings.ParsePauseSchedule(*f.PauseSchedule)
		if err != nil {
			return err
		}
		c.PauseSchedule = ps
	}
	if f.KeepLabel != nil {
		c.KeepLabel = *f.KeepLabel
	}
	if f.AllowUnknownPrices != nil {
		c.AllowUnknownPrices = *f.AllowUnknownPrices
	}
	if f.ShareParkedWorkers != nil {
		c.ShareParkedWorkers = *f.ShareParkedWorkers
	}
	for _, z := range f.DNSZones {
		c.DNSZones = append(c.DNSZones, normalizeZone(z))
	}
	for _, o := range f.WorkerOffers {
		c.WorkerOffers = append(c.WorkerOffers, strings.TrimSpace(o))
	}
	for k, v := range f.Quotas {
		if c.Quotas == nil {
			c.Quotas = map[string]int{}
		}
		c.Quotas[strings.TrimSpace(k)] = v
	}
	if f.ServiceAccountKey != nil {
		c.ServiceAccountKey = settings.ServiceAccountKey(strings.ToLower(strings.TrimSpace(*f.ServiceAccountKey)))
	}
	return nil
}

func normalizeZone(z string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(z)), ".")
}

// ValidDNSZone checks a DNS zone name: the settings table's one rule (settings.CheckDNSZone),
// which `/poc up --dns-zone` also applies.
func ValidDNSZone(z string) error { return settings.CheckDNSZone(z) }

// CheckDNSZone says whether `/poc up --dns-zone zone` may use zone: only a zone listed in
// dns_zones. The error names the setting, for the reply.
func (c RepoConfig) CheckDNSZone(zone string) error {
	zone = normalizeZone(zone)
	if slices.Contains(c.DNSZones, zone) {
		return nil
	}
	if len(c.DNSZones) == 0 {
		return fmt.Errorf("--dns-zone %s: this repository allows no DNS zone; a maintainer can list the zones clusters may use under dns_zones in %s", zone, Path)
	}
	return fmt.Errorf("--dns-zone %s is not one of the zones allowed by dns_zones in %s (%s)", zone, Path, strings.Join(c.DNSZones, ", "))
}

// Validate checks the values make sense together.
func (c RepoConfig) Validate() error {
	var errs []error
	if c.MaxClusters < 1 || c.MaxClusters > 100 {
		errs = append(errs, fmt.Errorf("max_clusters: %d, want 1 to 100", c.MaxClusters))
	}
	if c.MaxDailyNanoEUR <= 0 || c.MaxDailyNanoEUR > 100_000*1_000_000_000 {
		errs = append(errs, fmt.Errorf("max_daily_eur: %s, want more than 0 and at most 100000", FormatEUR(c.MaxDailyNanoEUR)))
	}
	if c.MaxPaused < time.Hour || c.MaxPaused > 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("max_paused: %s, want 1h up to 30d", FormatDuration(c.MaxPaused)))
	}
	if c.ParkFor < 0 || c.ParkFor > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("park_for: %s, want 0 (off) up to 7d", FormatDuration(c.ParkFor)))
	}
	if c.MinTTL <= 0 {
		errs = append(errs, fmt.Errorf("min_ttl: %s, want a positive duration", c.MinTTL))
	}
	if c.MaxTTL > 366*24*time.Hour {
		errs = append(errs, fmt.Errorf("max_ttl: %s, want at most 366d", FormatDuration(c.MaxTTL)))
	}
	if c.MinTTL > c.MaxTTL {
		errs = append(errs, fmt.Errorf("min_ttl %s is above max_ttl %s", FormatDuration(c.MinTTL), FormatDuration(c.MaxTTL)))
	} else if c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL {
		errs = append(errs, fmt.Errorf("default_ttl %s is outside [min_ttl %s, max_ttl %s]", FormatDuration(c.DefaultTTL), FormatDuration(c.MinTTL), FormatDuration(c.MaxTTL)))
	}
	if c.WarnBefore < 0 {
		errs = append(errs, fmt.Errorf("warn_before: %s, want 0 or more", c.WarnBefore))
	}
	if len(c.WorkerOffers) > 5 {
		errs = append(errs, fmt.Errorf("worker_offers: %d offers, want at most 5", len(c.WorkerOffers)))
	}
	for _, o := range c.WorkerOffers {
		if err := settings.CheckOffer(o); err != nil {
			errs = append(errs, fmt.Errorf("worker_offers: %w", err))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Quotas)) {
		if err := settings.CheckQuotaKey(k); err != nil {
			errs = append(errs, fmt.Errorf("quotas: %w", err))
		}
		if v := c.Quotas[k]; v < 0 || v > settings.MaxQuota {
			errs = append(errs, fmt.Errorf("quotas: %s: %d, want 0 to %d", k, v, settings.MaxQuota))
		}
	}
	if err := settings.CheckServiceAccountKey(string(c.ServiceAccountKey)); err != nil {
		errs = append(errs, fmt.Errorf("service_account_key: %w", err))
	}
	switch c.PullRequests {
	case PRLabel, PRAlways, PRNever:
	default:
		errs = append(errs, fmt.Errorf("pull_requests: %q, want label, always or never", c.PullRequests))
	}
	for _, z := range c.DNSZones {
		if err := ValidDNSZone(z); err != nil {
			errs = append(errs, fmt.Errorf("dns_zones: %q: %w", z, err))
		}
	}
	if len(c.DNSZones) > 50 {
		errs = append(errs, fmt.Errorf("dns_zones: %d zones, at most 50", len(c.DNSZones)))
	}
	for _, l := range []struct{ key, v string }{{"pr_label", c.PRLabel}, {"keep_label", c.KeepLabel}} {
		if err := checkLabel(l.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.key, err))
		}
	}
	return errors.Join(errs...)
}

// checkLabel follows GitHub's limits: 1 to 50 characters, printable.
func checkLabel(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty label")
	}
	if n := len([]rune(s)); n > 50 {
		return fmt.Errorf("%d characters, GitHub allows 50", n)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return errors.New("control character in label")
		}
	}
	return nil
}

// CheckTTL returns the lifetime to use for a request: the default when
// requested is 0, else requested if within [MinTTL, MaxTTL]; the error names
// the bound.
func (c RepoConfig) CheckTTL(requested time.Duration) (time.Duration, error) {
	switch {
	case requested == 0:
		return c.DefaultTTL, nil
	case requested < c.MinTTL:
		return 0, fmt.Errorf("ttl %s is below min_ttl %s of %s", FormatDuration(requested), FormatDuration(c.MinTTL), Path)
	case requested > c.MaxTTL:
		return 0, fmt.Errorf("ttl %s is above max_ttl %s of %s", FormatDuration(requested), FormatDuration(c.MaxTTL), Path)
	}
	return requested, nil
}

// ParseDuration reads a duration key with the one grammar of every setting
// (settings.ParseDuration: Go durations plus days, "3d", "1d12h", "1.5d").
func ParseDuration(s string) (time.Duration, error) {
	return settings.ParseDuration(strings.TrimSpace(s))
}

// FormatDuration prints a duration the way ParseDuration reads it, with days:
// "7d", "1d12h", "8h", "1h30m", "90ms".
func FormatDuration(d time.Duration) string { return settings.FormatDuration(d) }

// ParseEUR reads a decimal euro amount exactly into nano-euros (max_daily_eur, wherever it is
// written).
func ParseEUR(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "eE/_") {
		return 0, fmt.Errorf("%q is not a decimal amount in euros like 15 or 12.50", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a decimal amount in euros like 15 or 12.50", s)
	}
	r.Mul(r, big.NewRat(1_000_000_000, 1))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, fmt.Errorf("%q has more than 9 decimals or is too large", s)
	}
	return r.Num().Int64(), nil
}

// FormatEUR prints nano-euros exactly, e.g. "15", "12.5".
func FormatEUR(n int64) string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	s := strconv.FormatUint(u/1_000_000_000, 10)
	if frac := strings.TrimRight(fmt.Sprintf("%09d", u%1_000_000_000), "0"); frac != "" {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}

// YAML renders the configuration as a complete `.github/poc.yml` that Parse
// reads back to the same value (used for the documented example).
func (c RepoConfig) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "max_clusters: %d\n", c.MaxClusters)
	fmt.Fprintf(&b, "max_daily_eur: %s\n", FormatEUR(c.MaxDailyNanoEUR))
	fmt.Fprintf(&b, "max_ttl: %s\n", FormatDuration(c.MaxTTL))
	fmt.Fprintf(&b, "default_ttl: %s\n", FormatDuration(c.DefaultTTL))
	fmt.Fprintf(&b, "min_ttl: %s\n", FormatDuration(c.MinTTL))
	fmt.Fprintf(&b, "warn_before: %s\n", FormatDuration(c.WarnBefore))
	fmt.Fprintf(&b, "pull_requests: %s\n", c.PullRequests)
	fmt.Fprintf(&b, "pr_label: %s\n", strconv.Quote(c.PRLabel))
	fmt.Fprintf(&b, "drafts: %t\n", c.Drafts)
	fmt.Fprintf(&b, "keep_label: %s\n", strconv.Quote(c.KeepLabel))
	fmt.Fprintf(&b, "allow_unknown_prices: %t\n", c.AllowUnknownPrices)
	fmt.Fprintf(&b, "service_account_key: %s\n", c.ServiceAccountKey)
	if len(c.Quotas) > 0 {
		b.WriteString("quotas:\n")
		for _, k := range slices.Sorted(maps.Keys(c.Quotas)) {
			fmt.Fprintf(&b, "  %s: %d\n", k, c.Quotas[k])
		}
	}
	if len(c.DNSZones) == 0 {
		b.WriteString("dns_zones: []\n")
	} else {
		b.WriteString("dns_zones:\n")
		for _, z := range c.DNSZones {
			fmt.Fprintf(&b, "  - %s\n", z)
		}
	}
	return []byte(b.String())
}
