package commands

import (
	"strings"
	"testing"
	"time"
)

// TestParseRunsNothing: comments that must not run anything. Ignored: no line a reader sees as a
// top-level paragraph line starting with /poc — including text a reader does not see as one (an
// HTML comment, indented or fenced code, a quote, a list item, a heading: issue 11 hole 5).
// Refused: a command line with a non-ASCII letter that Unicode case folding reads as ASCII (the
// Kelvin sign U+212A folds to "k", the long s U+017F to "s": issue 11 hole 10); verbs, flags and
// the prefix are ASCII only.
func TestParseRunsNothing(t *testing.T) {
	ignored := []string{
		"",
		"looks good to me",
		"/pocket money",
		"poc up",
		"see /poc up in the docs",
		"> /poc up",
		"  > > /poc down",
		"```\n/poc up\n```",
		"```\n/poc up", // unterminated fence: the rest of the comment is code
		"~~~\n/poc up\n```\n/poc down\n",
		"<!-- hidden\n/poc up\n",
		"`/poc up`", // inline code is talking about it
		"looks good <!--\n/poc down\n-->",
		"looks good <!-- /poc down -->",
		"looks good\n<!--\n/poc down\n-->",
		"    /poc down",
		"thanks\n\n    /poc down",
		"\t/poc down",
		"- /poc down",
		"1. /poc down",
		"* note\n  /poc down",
		"/poc down\n---",
		"# /poc down",
		"> /poc down",
		"> quoted\n/poc down", // CommonMark lazy continuation: the line is part of the quote
		"<details>\n/poc down\n</details>",
	}
	for _, body := range ignored {
		if r := Parse(body, ParseConfig{}); !r.Ignore || r.Command != nil || r.Reply != "" {
			t.Errorf("Parse(%q) = %+v, want Ignore: no command is a visible top-level paragraph line", body, r)
		}
	}
	refused := []string{
		"/poc \u212Aubeconfig",
		"/poc help \u212Aubeconfig",
		"/poc up --\u212Aeep",
		"/poc up --dry-run --ttl 8h --cp-type PLAY2-NANO --wor\u212Aer-offer EM-A116X-SSD",
		"/poc up --dry-run --dns-zone \u212A8s.example.com",
		"/poc up --dry-run --cp-type play2-nano-\u017F",
	}
	for _, body := range refused {
		if r := Parse(body, ParseConfig{}); r.Command != nil || r.Reply == "" {
			t.Errorf("Parse(%q) = %+v, want a refusal (non-ASCII letter)", body, r.Command)
		}
	}
	if r := Parse("/POC KUBECONFIG", ParseConfig{}); r.Command == nil || r.Command.Verb != VerbKubeconfig {
		t.Errorf("ASCII upper case must still fold: %+v", r)
	}
}

// TestParseVisibleText keeps what a reader does see as a command line working.
func TestParseVisibleText(t *testing.T) {
	tests := []struct {
		body string
		want Verb
	}{
		{"looks good\n/poc down", VerbDown},
		{"/poc up <!-- a note -->", VerbUp},
		{"<!-- hidden -->\n\n/poc status", VerbStatus},
		{"- a list\n\n/poc cost", VerbCost},
		{"   /poc status", VerbStatus}, // up to 3 spaces: still a paragraph
		{"```\n/poc down\n```\n/poc cost", VerbCost},
		{"looks good <!--\n/poc down\n-->\n\n/poc status", VerbStatus},
	}
	for _, tt := range tests {
		r := Parse(tt.body, ParseConfig{})
		if r.Command == nil || r.Command.Verb != tt.want {
			t.Errorf("Parse(%q) = %+v, want verb %s", tt.body, r, tt.want)
		}
	}
	// Hidden text inside the line does not reach the arguments.
	r := Parse("/poc up --ttl 4h <!-- --ttl 72h -->", ParseConfig{})
	if r.Command == nil || r.Command.Up.TTL != 4*time.Hour {
		t.Errorf("hidden flags reached the command: %+v", r)
	}
	// Backslash escapes of the grammar survive the Markdown parse.
	r = Parse(`/poc up --extensions "siderolabs/iscsi-tools\\" `, ParseConfig{})
	if r.Command != nil {
		t.Errorf("escaped quote: got command %+v, want a parse error (the extension name holds a backslash)", r.Command)
	}
}

// TestOpenToWorld replays issue 11 hole 10: the warning fires when the admin CIDRs together
// cover more than a /8's worth of IPv4 addresses (or more than a /40 of IPv6, counted in /64
// subnets), not only for the literal 0.0.0.0/0.
func TestOpenToWorld(t *testing.T) {
	tests := []struct {
		cidrs []string
		want  bool
	}{
		{nil, true},
		{[]string{"0.0.0.0/0"}, true},
		{[]string{"::/0"}, true},
		{[]string{"0.0.0.0/1", "128.0.0.0/1"}, true},
		{[]string{"10.0.0.0/7"}, true},
		{[]string{"10.0.0.0/8", "11.0.0.0/8"}, true},
		{[]string{"10.0.0.0/8"}, false},
		{[]string{"10.0.0.0/8", "10.0.0.0/8", "10.1.0.0/16"}, false}, // the union counts, not the sum
		{[]string{"203.0.113.7/32", "2001:db8::/48"}, false},
		{[]string{"2001:db8::/40"}, false},
		{[]string{"2001:db8::/39"}, true},
		{[]string{"10.0.0.0/9", "2001:db8::/40"}, true}, // the families add up: half + whole is over
		{[]string{"::ffff:0.0.0.0/96"}, true},           // IPv4-mapped: the whole IPv4 space
		{[]string{"not a cidr"}, true},                  // unreadable: assume the worst
	}
	for _, tt := range tests {
		if got := OpenToWorld(tt.cidrs); got != tt.want {
			t.Errorf("OpenToWorld(%v) = %v, want %v", tt.cidrs, got, tt.want)
		}
	}
	body := RenderSticky(StickyView{Cluster: "c", Verb: VerbUp, Phase: "ready", Up: &UpView{Cluster: "c",
		AdminCIDRs: []string{"0.0.0.0/1", "128.0.0.0/1"}}})
	if !strings.Contains(body, "[!WARNING]") || !strings.Contains(body, "0.0.0.0/1") {
		t.Errorf("the warning does not show for 0.0.0.0/1 + 128.0.0.0/1:\n%s", body)
	}
}

// TestNoUsableKeyNamesTypes replays issue 11 hole 10: a user whose only keys are ecdsa or
// security keys is not told they have "no public SSH key".
func TestNoUsableKeyNamesTypes(t *testing.T) {
	out := RenderKubeconfig("c", KubeconfigAccess{Login: "erin", NoKeys: true,
		Unusable: []string{"ecdsa-sha2-nistp256", "sk-ssh-ed25519@openssh.com"}}, time.Now())
	for _, want := range []string{"ecdsa-sha2-nistp256", "sk-ssh-ed25519@openssh.com", "ssh-ed25519", "ssh-rsa", "2048"} {
		if !strings.Contains(out, want) {
			t.Errorf("reply does not name %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "has no public SSH key") {
		t.Errorf("reply says the user has no key although they have two:\n%s", out)
	}
}
