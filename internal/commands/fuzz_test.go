package commands

import (
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var fuzzCfg = ParseConfig{MinTTL: time.Hour, MaxTTL: 48 * time.Hour}

// staticCorpus is every text a parse reply may hold that does not come from the input: the help
// of every topic. Input windows found in a reply must come from here.
func staticCorpus() string {
	var b strings.Builder
	b.WriteString(HelpText(fuzzCfg, ""))
	for _, v := range Verbs {
		b.WriteString(HelpText(fuzzCfg, v))
	}
	return b.String()
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/poc", "/poc up", "/poc up --ttl 8h --dry-run", "/POC DOWN\r\n", "> /poc up\n/poc cost",
		"```\n/poc up\n```\n/poc status", "/poc up --admin-cidr 10.0.0.0/8 192.0.2.1 --extensions a,b",
		"/poc extend 1d12h", "/poc up --ttl '4h", "/poc up --talos v1.13.11 --dns-zone example.com",
		"/poc <script>alert(1)</script>", "/poc up --x @octocat #1", "/poc up --tll ghs_abcdefghijklmnopqrstuvwxyz",
		"/poc help up", "/poc up --help", "<!--\n/poc down\n-->", "~~~\n/poc up\n~~~~\n/poc down",
		"/poc up --ttl 1.5d --expose-edge=false", "/poc extend 9999999999999999d", "/poc \xff\xfe",
		"/poc up --extensions " + strings.Repeat("a", 200),
		"looks good <!--\n/poc down\n-->", "    /poc down", "- /poc down", "/poc \u212Aubeconfig",
		"/poc up <!-- --ttl 72h -->", "> quoted\n/poc down", "/poc down\n---",
	} {
		f.Add(s)
	}
	static := staticCorpus()
	staticSecret := ContainsSecret(static)
	f.Fuzz(func(t *testing.T, body string) {
		r := Parse(body, fuzzCfg)
		// Hidden stays hidden (issue 11 hole 5): the same text inside an HTML comment, or
		// indented as code, never yields a command.
		if !strings.Contains(body, "-->") {
			if h := Parse("<!--\n"+body+"\n-->", fuzzCfg); h.Command != nil || h.Reply != "" {
				t.Fatalf("a command ran from inside an HTML comment: %q", body)
			}
		}
		if !strings.ContainsAny(body, "\r") {
			indented := "    " + strings.ReplaceAll(body, "\n", "\n    ")
			if h := Parse(indented, fuzzCfg); h.Command != nil || h.Reply != "" {
				t.Fatalf("a command ran from an indented code block: %q", indented)
			}
		}
		n := 0
		if r.Command != nil {
			n++
		}
		if r.Reply != "" {
			n++
		}
		if r.Ignore {
			n++
		}
		if n != 1 {
			t.Fatalf("Parse(%q): %d of Command/Reply/Ignore set, want exactly 1", body, n)
		}
		if r.Command != nil {
			c := r.Command
			if !knownVerb(c.Verb) {
				t.Fatalf("unknown verb %q", c.Verb)
			}
			if c.Up.TTL != 0 && (c.Up.TTL < fuzzCfg.MinTTL || c.Up.TTL > fuzzCfg.MaxTTL) {
				t.Fatalf("TTL %v out of bounds", c.Up.TTL)
			}
			if c.Verb == VerbExtend && (c.Extend <= 0 || c.Extend > fuzzCfg.MaxTTL) {
				t.Fatalf("extend %v out of bounds", c.Extend)
			}
			cidrs, _ := c.Up.Spec["admin-cidr"].([]string)
			for _, s := range cidrs {
				if p, err := netip.ParsePrefix(s); err != nil || p.Masked() != p {
					t.Fatalf("admin CIDR %q invalid or not masked", s)
				}
			}
			return
		}
		if r.Reply == "" {
			return
		}
		if !utf8.ValidString(r.Reply) {
			t.Fatalf("reply is not UTF-8: %q", r.Reply)
		}
		if len(r.Reply) > len(static)+2048 {
			t.Fatalf("reply of %d bytes is longer than the help plus an error line", len(r.Reply))
		}
		// Markdown injection: no raw HTML, no mention, no secret can come from the input.
		if strings.Contains(r.Reply, "<") {
			t.Fatalf("reply holds '<': %q", r.Reply)
		}
		for _, bad := range []string{"@", "#"} {
			for i := 0; ; {
				j := strings.Index(r.Reply[i:], bad)
				if j < 0 {
					break
				}
				i += j + 1
				if !strings.HasPrefix(r.Reply[i:], "\u200b") {
					t.Fatalf("reply holds a live %q: %q", bad, r.Reply)
				}
			}
		}
		if !staticSecret && ContainsSecret(r.Reply) {
			t.Fatalf("reply holds a secret: %q", r.Reply)
		}
		// No more than MaxEcho characters of input in a row, unless the help says the same.
		in := []rune(body)
		for i := 0; i+MaxEcho <= len(in); i++ {
			w := string(in[i : i+MaxEcho])
			if strings.Contains(r.Reply, w) && !strings.Contains(static, w) {
				t.Fatalf("reply echoes %q raw", w)
			}
		}
	})
}

func FuzzRedact(f *testing.F) {
	for _, s := range redactSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := Redact(s)
		if ContainsSecret(r) {
			t.Fatalf("Redact(%q) = %q still holds a secret", s, r)
		}
		if Redact(r) != r {
			t.Fatalf("Redact is not idempotent on %q", s)
		}
		if !ContainsSecret(s) && r != s {
			t.Fatalf("ContainsSecret false but Redact changed %q", s)
		}
	})
}

func FuzzClusterName(f *testing.F) {
	f.Add("acme", "shop", 42)
	f.Add("Ünïcode", "répo.name", 7)
	f.Add(strings.Repeat("a", 39), strings.Repeat("b-", 50), 123456789)
	f.Add("", "", -1)
	f.Fuzz(func(t *testing.T, owner, repo string, n int) {
		name := ClusterName(owner, repo, n)
		if err := ValidClusterName(name); err != nil {
			t.Fatalf("ClusterName(%q, %q, %d) = %q: %v", owner, repo, n, name, err)
		}
		if ClusterName(owner, repo, n) != name {
			t.Fatal("not stable")
		}
	})
}
