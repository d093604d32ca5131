package repoconfig_test

import (
	"github.com/pocbot/pocbot/internal/settings"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/repoconfig"
)

func TestParse(t *testing.T) {
	def := repoconfig.Default()
	tests := []struct {
		name    string
		in      string
		want    func(c *repoconfig.RepoConfig)
		wantErr string
	}{
		{"empty file is the defaults", "", nil, ""},
		{"only comments", "# nothing here\n", nil, ""},
		{"full", `
max_clusters: 5
max_daily_eur: 12.50
max_ttl: 3d
default_ttl: 1d12h
min_ttl: 30m
warn_before: 2h
pull_requests: always
pr_label: "needs cluster"
drafts: true
keep_label: keep
allow_unknown_prices: true
`, func(c *repoconfig.RepoConfig) {
			c.MaxClusters, c.MaxDailyNanoEUR = 5, 12_500_000_000
			c.MaxTTL, c.DefaultTTL, c.MinTTL, c.WarnBefore = 72*time.Hour, 36*time.Hour, 30*time.Minute, 2*time.Hour
			c.PullRequests, c.PRLabel, c.Drafts, c.KeepLabel, c.AllowUnknownPrices = repoconfig.PRAlways, "needs cluster", true, "keep", true
		}, ""},
		{"integer euros", "max_daily_eur: 4\n", func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 4_000_000_000 }, ""},
		{"nine decimals exact", "max_daily_eur: 4.123456789\n", func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 4_123_456_789 }, ""},
		{"unknown key named", "max_cluster: 2\n", nil, `unknown key "max_cluster" (known keys: default_ttl,`},
		{"two unknown keys", "b: 1\na: 2\n", nil, `unknown key "a", "b"`},
		{"not a mapping", "- max_clusters\n", nil, "must be a mapping"},
		{"wrong type", "max_clusters: many\n", nil, "cannot unmarshal"},
		{"duplicate key", "max_clusters: 2\nmax_clusters: 3\n", nil, "already set"},
		{"bad duration", "max_ttl: forever\n", nil, `max_ttl: "forever" is not a duration`},
		{"negative duration", "min_ttl: -1h\n", nil, "negative"},
		{"float notation refused", "max_daily_eur: 1e3\n", nil, "max_daily_eur"},
		{"ten decimals refused", "max_daily_eur: 0.0000000001\n", nil, "more than 9 decimals"},
		{"zero budget", "max_daily_eur: 0\n", nil, "max_daily_eur: 0, want more than 0"},
		{"zero clusters", "max_clusters: 0\n", nil, "max_clusters: 0, want 1 to 100"},
		{"default above max", "max_ttl: 4h\ndefault_ttl: 8h\n", nil, "default_ttl 8h is outside [min_ttl 1h, max_ttl 4h]"},
		{"min above max", "min_ttl: 2d\nmax_ttl: 1d\n", nil, "min_ttl 2d is above max_ttl 1d"},
		{"bad pr mode", "pull_requests: sometimes\n", nil, `pull_requests: "sometimes", want label, always or never`},
		{"long label", "keep_label: " + strings.Repeat("k", 51) + "\n", nil, "keep_label: 51 characters"},
		{"empty label", "pr_label: ''\n", nil, "pr_label: empty label"},
		{"invalid yaml", "max_clusters: [\n", nil, "not valid YAML"},
		{"park for", "park_for: 2h\n", func(c *repoconfig.RepoConfig) { c.ParkFor = 2 * time.Hour }, ""},
		{"park off", "park_for: 0\n", nil, ""},
		{"share parked workers", "share_parked_workers: true\n", func(c *repoconfig.RepoConfig) { c.ShareParkedWorkers = true }, ""},
		{"share parked workers, not a boolean", "share_parked_workers: maybe\n", nil, "line 1: cannot unmarshal"},
		{"park too long", "park_for: 8d\n", nil, "park_for: 8d, want 0 (off) up to 7d"},
		{"ecdsa service-account key", "service_account_key: ECDSA\n", func(c *repoconfig.RepoConfig) { c.ServiceAccountKey = settings.ServiceAccountKeyECDSA }, ""},
		{"unknown service-account key", "service_account_key: ed25519\n", nil, `service_account_key: "ed25519": give rsa or ecdsa`},
		{"too big", strings.Repeat("#", 70<<10), nil, "more than the 65536 accepted"},
		{"quotas", "quotas:\n  PLAY2-NANO: 10\n  EM-A116X-SSD: 3\n  ips: 50\n", func(c *repoconfig.RepoConfig) {
			c.Quotas = map[string]int{"PLAY2-NANO": 10, "EM-A116X-SSD": 3, "ips": 50}
		}, ""},
		{"quotas, not a mapping", "quotas: [PLAY2-NANO]\n", nil, "quotas: give a mapping"},
		{"quota of an unknown product", "quotas: {instance_ips: 3}\n", nil, `quotas: "instance_ips": give an Instance type`},
		{"quota not a number", "quotas: {ips: many}\n", nil, "cannot unmarshal"},
		{"negative quota", "quotas: {ips: -1}\n", nil, "quotas: ips: -1, want 0 to 100000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := repoconfig.Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), ".github/poc.yml") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := def
			if tc.want != nil {
				tc.want(&want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestCheckTTL(t *testing.T) {
	c := repoconfig.Default()
	tests := []struct {
		in      time.Duration
		want    time.Duration
		wantErr string
	}{
		{0, 8 * time.Hour, ""},
		{time.Hour, time.Hour, ""},
		{7 * 24 * time.Hour, 7 * 24 * time.Hour, ""},
		{30 * time.Minute, 0, "ttl 30m is below min_ttl 1h"},
		{8 * 24 * time.Hour, 0, "ttl 8d is above max_ttl 7d"},
	}
	for _, tc := range tests {
		got, err := c.CheckTTL(tc.in)
		if (err != nil) != (tc.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) || got != tc.want {
			t.Errorf("CheckTTL(%s) = %s, %v; want %s, %q", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		out  string
	}{
		{"8h", 8 * time.Hour, "8h"},
		{"3d", 72 * time.Hour, "3d"},
		{"1d12h", 36 * time.Hour, "1d12h"},
		{"90m", 90 * time.Minute, "1h30m"},
		{"90s", 90 * time.Second, "1m30s"},
		{"1500ms", 1500 * time.Millisecond, "1.5s"},
		// The comment's grammar is the file's (issue 23): refused here before.
		{"1.5d", 36 * time.Hour, "1d12h"},
		{"0", 0, "0s"},
	}
	for _, tc := range tests {
		got, err := repoconfig.ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %s, %v", tc.in, got, err)
		}
		if s := repoconfig.FormatDuration(got); s != tc.out {
			t.Errorf("FormatDuration(%s) = %q, want %q", got, s, tc.out)
		}
	}
	for _, bad := range []string{"", "d", "3", "1d-2h", "-5m", "1w", "99999999999999d"} {
		if _, err := repoconfig.ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
	// A duration the grammar reads can still be out of a key's bounds.
	if _, err := repoconfig.Parse([]byte("max_ttl: 99999d\n")); err == nil {
		t.Error("max_ttl: 99999d accepted")
	}
}

func TestDefaultRoundTrips(t *testing.T) {
	got, err := repoconfig.Parse(repoconfig.Default().YAML())
	if err != nil || !reflect.DeepEqual(got, repoconfig.Default()) {
		t.Fatalf("Parse(Default().YAML()) = %+v, %v", got, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "max_clusters: 2\n", "max_daily_eur: 12.5\nmax_ttl: 3d\n", "pr_label: \"a\\tb\"\n", "keep_label: é\n", "[1, 2]", "a: {b: c}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		type result struct {
			c   repoconfig.RepoConfig
			err error
		}
		done := make(chan result, 1)
		go func() {
			c, err := repoconfig.Parse(data)
			done <- result{c, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Parse(%q) still running after 5s", data)
		}
		c, err := r.c, r.err
		if err != nil {
			if !strings.HasPrefix(err.Error(), repoconfig.Path) {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		if c.MinTTL > c.DefaultTTL || c.DefaultTTL > c.MaxTTL || c.MaxDailyNanoEUR <= 0 {
			t.Fatalf("invariants broken: %+v", c)
		}
		back, err := repoconfig.Parse(c.YAML())
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip: %+v → %q → %+v, %v", c, c.YAML(), back, err)
		}
	})
}

// TestListKeys: the keys that hold a list (dns_zones, worker_offers) parse and refuse alike.
func TestListKeys(t *testing.T) {
	zones := func(c repoconfig.RepoConfig) []string { return c.DNSZones }
	offers := func(c repoconfig.RepoConfig) []string { return c.WorkerOffers }
	for _, tc := range []struct {
		name, in string
		get      func(repoconfig.RepoConfig) []string
		want     []string
		wantErr  string
	}{
		{"dns_zones default: none", "", zones, nil, ""},
		{"dns_zones listed, normalized", "dns_zones: [POC.Example.com., dev.example.org]", zones, []string{"poc.example.com", "dev.example.org"}, ""},
		{"dns_zones not a domain", "dns_zones: [localhost]", zones, nil, "dns_zones"},
		{"dns_zones not a list", "dns_zones: poc.example.com", zones, nil, "dns_zones"},
		{"worker_offers default: none", "", offers, nil, ""},
		{"worker_offers in order", "worker_offers: [EM-A116X-SSD, EM-A115X-SSD]", offers, []string{"EM-A116X-SSD", "EM-A115X-SSD"}, ""},
		{"worker_offers not an offer name", "worker_offers: [\"EM A116X; rm\"]", offers, nil, "worker_offers"},
		{"worker_offers not a list", "worker_offers: EM-A116X-SSD", offers, nil, "worker_offers"},
		{"worker_offers too many", "worker_offers: [A-1, A-2, A-3, A-4, A-5, A-6]", offers, nil, "at most 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := repoconfig.Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(tc.get(c), tc.want) {
				t.Fatalf("got %v, err %v; want %v", tc.get(c), err, tc.want)
			}
		})
	}
}

// TestDNSZoneAllowlist: nothing by default, and exactly the listed zones otherwise.
func TestDNSZoneAllowlist(t *testing.T) {
	def := repoconfig.Default()
	if err := def.CheckDNSZone("prod.example.com"); err == nil || !strings.Contains(err.Error(), "dns_zones") || !strings.Contains(err.Error(), repoconfig.Path) {
		t.Errorf("default config allowed a zone, or did not name the setting: %v", err)
	}
	c, _ := repoconfig.Parse([]byte("dns_zones: [poc.example.com]"))
	for zone, ok := range map[string]bool{"poc.example.com": true, "POC.example.com.": true, "prod.example.com": false,
		"x.poc.example.com": false, "example.com": false} {
		if err := c.CheckDNSZone(zone); (err == nil) != ok {
			t.Errorf("CheckDNSZone(%q) = %v, want allowed=%v", zone, err, ok)
		}
	}
}
