package commands

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

func TestParseCommands(t *testing.T) {
	cfg := ParseConfig{}
	tests := []struct {
		name string
		body string
		want Command // Line is not compared
	}{
		{"bare poc is help", "/poc", Command{Verb: VerbHelp}},
		{"help", "/poc help", Command{Verb: VerbHelp}},
		{"help topic", "/poc help up", Command{Verb: VerbHelp, Topic: VerbUp}},
		{"verb --help", "/poc extend --help", Command{Verb: VerbHelp, Topic: VerbExtend}},
		{"up plain", "/poc up", Command{Verb: VerbUp}},
		{"case-insensitive verb and prefix", "/POC Up", Command{Verb: VerbUp}},
		{"leading spaces, CRLF", "thanks!\r\n   /poc down\r\nbye", Command{Verb: VerbDown}},
		{"tab separated", "/poc\tstatus", Command{Verb: VerbStatus}},
		{"cost", "/poc cost", Command{Verb: VerbCost}},
		{"kubeconfig", "/poc kubeconfig", Command{Verb: VerbKubeconfig}},
		{"extend days", "/poc extend 1d", Command{Verb: VerbExtend, Extend: 24 * time.Hour}},
		{"extend plus", "/poc extend +90m", Command{Verb: VerbExtend, Extend: 90 * time.Minute}},
		{"up all flags", "/poc up --ttl 4h --dry-run --talos 1.13.11 --admin-cidr 203.0.113.0/24 --extensions siderolabs/iscsi-tools,siderolabs/util-linux-tools --dns-zone Example.COM. --expose-edge --cp-count 1 --cp-type play2-micro --worker-offer EM-A116X-SSD",
			Command{Verb: VerbUp, Up: UpOptions{
				TTL: 4 * time.Hour, DryRun: true, Spec: settings.Values{"talos": "v1.13.11",
					"admin-cidr": []string{"203.0.113.0/24"},
					"extensions": []string{"siderolabs/iscsi-tools", "siderolabs/util-linux-tools"},
					"dns-zone":   "example.com", "expose-edge": true, "cp-count": 1, "cp-type": "PLAY2-MICRO", "worker-offer": "EM-A116X-SSD"},
			}}},
		{"talos 1.14 (multi-document configs)", "/poc up --talos v1.14.1", Command{Verb: VerbUp, Up: UpOptions{Spec: settings.Values{"talos": "v1.14.1"}}}},
		{"flag=value and list forms", "/poc up --ttl=2d --admin-cidr 10.0.0.0/8 192.0.2.7 --admin-cidr=2001:db8::/32,198.51.100.0/24 --expose-edge=false",
			Command{Verb: VerbUp, Up: UpOptions{
				TTL: 48 * time.Hour,
				Spec: settings.Values{"admin-cidr": []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "198.51.100.0/24"},
					"expose-edge": false},
			}}},
		{"an empty list gives nothing", `/poc up --extensions ","`, Command{Verb: VerbUp}},
		{"quoted words", `/poc up --extensions "siderolabs/iscsi-tools, " --ttl '3h'`,
			Command{Verb: VerbUp, Up: UpOptions{TTL: 3 * time.Hour, Spec: settings.Values{"extensions": []string{"siderolabs/iscsi-tools"}}}}},
		{"first command wins", "/poc status\n/poc down", Command{Verb: VerbStatus}},
		{"quote skipped, later paragraph counts", "> /poc down\n\n/poc status", Command{Verb: VerbStatus}},
		{"fence skipped", "```\n/poc down\n```\n/poc cost", Command{Verb: VerbCost}},
		{"tilde fence with longer close", "~~~~sh\n/poc down\n~~~\n/poc down\n~~~~~\n/poc cost", Command{Verb: VerbCost}},
		{"html comment skipped", "<!--\n/poc down\n-->\n/poc status", Command{Verb: VerbStatus}},
		{"one-line html comment", "<!-- /poc down -->\n/poc status", Command{Verb: VerbStatus}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse(tt.body, cfg)
			if r.Command == nil {
				t.Fatalf("Parse(%q): no command; reply=%q ignore=%v", tt.body, r.Reply, r.Ignore)
			}
			if r.Reply != "" || r.Ignore {
				t.Fatalf("Parse(%q): command together with reply/ignore", tt.body)
			}
			got := *r.Command
			got.Line = ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.body, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cfg := ParseConfig{MinTTL: time.Hour, MaxTTL: 24 * time.Hour}
	tests := []struct {
		body      string
		wantInMsg string
		usageOf   string // a line only that verb's usage (or the full help) holds
	}{
		{"/poc deploy", "unknown command “deploy”", "| command | what it does | needs |"},
		{"/poc up --tll 8h", "unknown flag “--tll”", "Flags of `/poc up`"},
		{"/poc up --ttl", "--ttl needs a value", "Flags of `/poc up`"},
		{"/poc up --ttl 8", "“8” is not a duration", "Flags of `/poc up`"},
		{"/poc up --ttl 8H", "“8H” is not a duration", "Flags of `/poc up`"},
		{"/poc up --ttl 30m", "--ttl 30m is outside the allowed range 1h to 1d", "Flags of `/poc up`"},
		{"/poc up --ttl 2d", "--ttl 2d is outside the allowed range 1h to 1d", "Flags of `/poc up`"},
		{"/poc up --ttl -1h", "not a duration", "Flags of `/poc up`"},
		{"/poc up --ttl 4h --ttl 5h", "--ttl given twice", "Flags of `/poc up`"},
		{"/poc up --admin-cidr 10.0.0.300/8", "is not a CIDR", "Flags of `/poc up`"},
		{"/poc up --admin-cidr 10.0.0.1/24", "has host bits set: did you mean 10.0.0.0/24?", "Flags of `/poc up`"},
		{"/poc up --admin-cidr nope", "neither an address nor a CIDR", "Flags of `/poc up`"},
		{"/poc up --talos 1.13", "is not a version like v1.13.11", "Flags of `/poc up`"},
		{"/poc up --talos v1.15.0", "newer than v1.14", "Flags of `/poc up`"},
		{"/poc up --dns-zone localhost", "at least two labels", "Flags of `/poc up`"},
		{"/poc up --extensions Bad_Name", "is not a name like", "Flags of `/poc up`"},
		{"/poc up --cp-count 2", "give 1, 3 or 5", "Flags of `/poc up`"},
		{"/poc up --dry-run=maybe", "is a switch", "Flags of `/poc up`"},
		{"/poc up now", "unexpected argument “now”", "Flags of `/poc up`"},
		{"/poc up --ttl '4h", "unterminated ' quote", "| command | what it does | needs |"},
		{"/poc down --force", "`down` takes no arguments", "`/poc down`"},
		{"/poc extend", "needs exactly one duration", "`/poc extend DURATION`"},
		{"/poc extend 2d", "cannot extend by 2d: the maximum is 1d", "`/poc extend DURATION`"},
		{"/poc extend 0s", "must be positive", "`/poc extend DURATION`"},
		{"/poc help me please", "at most one word", "| command | what it does | needs |"},
		{"/poc help deploy", "no help on “deploy”", "| command | what it does | needs |"},
		{"/poc up " + strings.Repeat("x", 3000), "more than 2048", "| command | what it does | needs |"},
	}
	for _, tt := range tests {
		t.Run(tt.body[:min(len(tt.body), 40)], func(t *testing.T) {
			r := Parse(tt.body, cfg)
			if r.Command != nil || r.Ignore || r.Reply == "" {
				t.Fatalf("Parse(%q) = %+v, want a reply", tt.body, r)
			}
			if !strings.Contains(r.Reply, tt.wantInMsg) {
				t.Errorf("reply lacks %q:\n%s", tt.wantInMsg, r.Reply)
			}
			if !strings.Contains(r.Reply, tt.usageOf) {
				t.Errorf("reply lacks the usage line %q:\n%s", tt.usageOf, r.Reply)
			}
			if !strings.Contains(r.Reply, "Nothing was created") {
				t.Errorf("reply does not say nothing ran:\n%s", r.Reply)
			}
		})
	}
}

func TestParseEscapesEchoedInput(t *testing.T) {
	r := Parse("/poc <img src=x onerror=alert(1)>@octocat", ParseConfig{})
	if r.Reply == "" {
		t.Fatal("want a reply")
	}
	for _, bad := range []string{"<img", "@octocat", "alert(1)"} {
		if strings.Contains(r.Reply, bad) {
			t.Errorf("reply echoes %q raw:\n%s", bad, r.Reply)
		}
	}
	r = Parse("/poc up --tll ghp_abcdefghijklmnopqrstuvwxyz0123456789", ParseConfig{})
	if ContainsSecret(r.Reply) || strings.Contains(r.Reply, "ghp_abc") {
		t.Errorf("reply echoes a token:\n%s", r.Reply)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"8h", 8 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"2d", 48 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"0.5h", 30 * time.Minute, true},
		{"", 0, false},
		{"8", 0, false},
		{"h", 0, false},
		{"8H", 0, false},
		{"0h", 0, false},
		{"-1h", 0, false},
		{"1w", 0, false},
		{"1d 2h", 0, false},
		{"99999999999999d", 0, false},
		{"1..5h", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := map[time.Duration]string{
		45 * time.Second:                     "45s",
		8 * time.Hour:                        "8h",
		150 * time.Minute:                    "2h 30m",
		28 * time.Hour:                       "1d 4h",
		72 * time.Hour:                       "3d",
		24*time.Hour + 5*time.Minute:         "1d",
		-90 * time.Minute:                    "-1h 30m",
		59*time.Minute + 59*time.Second:      "1h",
		0:                                    "0s",
		30*time.Minute + 20*time.Second:      "30m",
		3*time.Minute + 500*time.Millisecond: "3m",
	}
	for d, want := range tests {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParsePause(t *testing.T) {
	for _, tc := range []struct {
		line    string
		release bool
		err     bool
	}{
		{"/poc pause", false, false},
		{"/poc pause --release-ips", true, false},
		{"/poc PAUSE --RELEASE-IPS", true, false},
		{"/poc pause now", false, true},
		{"/poc pause --release-ip", false, true},
		{"/poc resume", false, false},
		{"/poc resume --release-ips", false, true},
	} {
		cmd, err := parseLine(tc.line[len("/poc "):], ParseConfig{}.withDefaults())
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrSyntax)) {
			t.Errorf("%q: error %v, want error %v", tc.line, err, tc.err)
			continue
		}
		if err == nil && cmd.ReleaseIPs != tc.release {
			t.Errorf("%q: ReleaseIPs %v", tc.line, cmd.ReleaseIPs)
		}
	}
}
