package commands

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

// Verb is the first word after `/poc`.
type Verb string

// The verbs of the grammar. A bare `/poc` is VerbHelp.
const (
	VerbUp         Verb = "up"
	VerbDown       Verb = "down"
	VerbCost       Verb = "cost"
	VerbStatus     Verb = "status"
	VerbExtend     Verb = "extend"
	VerbKubeconfig Verb = "kubeconfig"
	VerbHelp       Verb = "help"
	VerbPause      Verb = "pause"
	VerbResume     Verb = "resume"
)

// Verbs lists every verb in the order the help text shows them.
var Verbs = []Verb{VerbUp, VerbDown, VerbPause, VerbResume, VerbExtend, VerbKubeconfig, VerbStatus, VerbCost, VerbHelp}

const (
	// MaxEcho is the most characters of user input a reply ever repeats (escaped).
	MaxEcho = 48
	// maxLineLen bounds the command line we look at; longer lines are refused, never parsed.
	maxLineLen = 2048
	maxListLen = 16
)

// ParseConfig carries the repository's bounds (from .github/poc.yml). Zero fields take the
// settings table's defaults (internal/settings: the same as repoconfig.Default() and
// deploy/poc.example.yml), and MaxTalosMinor the newest minor the pinned machinery library can
// generate configs for (internal/provision/talos tests check the two agree).
type ParseConfig struct {
	DefaultTTL    time.Duration
	MinTTL        time.Duration
	MaxTTL        time.Duration // bounds --ttl and the duration of /poc extend
	MaxTalosMinor string        // "v1.14": newer minors are refused
}

func (c ParseConfig) withDefaults() ParseConfig {
	if c.DefaultTTL <= 0 {
		c.DefaultTTL = settings.DefaultTTL
	}
	if c.MinTTL <= 0 {
		c.MinTTL = settings.DefaultMinTTL
	}
	if c.MaxTTL <= 0 {
		c.MaxTTL = settings.DefaultMaxTTL
	}
	if c.MaxTTL < c.MinTTL {
		c.MaxTTL = c.MinTTL
	}
	if c.MaxTalosMinor == "" {
		c.MaxTalosMinor = settings.MaxTalosMinor
	}
	return c
}

// Result is the Atlantis shape: exactly one of Command (run it), Reply (post it, nothing runs)
// or Ignore (the comment holds no command) is meaningful.
type Result struct {
	Command *Command
	Reply   string
	Ignore  bool
}

// Command is one parsed `/poc` line.
type Command struct {
	Verb Verb
	// Line is the command line as found (trimmed). It is user text: escape it before echoing
	// (Quote does).
	Line string
	// Topic is set for `/poc help VERB` and `/poc VERB --help`.
	Topic Verb
	// Up holds the flags of `/poc up`; zero values mean "the repository's or the cluster's default (docs/seed.md)".
	Up UpOptions
	// Extend is the duration of `/poc extend DURATION`.
	Extend time.Duration
	// ReleaseIPs is `/poc pause --release-ips`.
	ReleaseIPs bool
}

// UpOptions are the overrides of the cluster's defaults (docs/seed.md, The cluster) a comment may set. Exposed: TTL, dry-run, Talos version,
// admin CIDRs, extensions, DNS zone, edge on control planes, control-plane count and type, the
// worker's offer. Not exposed (they change what the bot can promise or are the operator's):
// zone/region, volume size and IOPS, the bucket, the Cilium mode.
type UpOptions struct {
	TTL    time.Duration // 0: the repository default
	DryRun bool          // plan and cost only
	// Spec holds the cluster's settings the comment gives, by the settings table's name, checked
	// and normalized: talos as "v1.13.11" (with its v), admin-cidr as masked CIDRs
	// ("203.0.113.0/24"), extensions, dns-zone (lower case, no trailing dot), expose-edge,
	// cp-count (1, 3 or 5), cp-type and worker-offer (upper case). Nil when the comment gives none:
	// what it does not give keeps the cluster's value. provision.Spec.Apply writes them into the
	// spec, the one binding of a setting to the cluster.
	Spec settings.Values
}

// set records the comment's value x of the setting name.
func (o *UpOptions) set(name string, x any) {
	if o.Spec == nil {
		o.Spec = settings.Values{}
	}
	o.Spec.Set(name, x)
}

// list is the comment's list setting name so far (a list flag may be repeated).
func (o *UpOptions) list(name string) []string {
	l, _ := o.Spec[name].([]string)
	return l
}

// ErrSyntax wraps every parse error, so callers can tell a user mistake from anything else.
var ErrSyntax = errors.New("invalid /poc command")

// Parse finds the command of a comment body. The first line of a top-level Markdown paragraph
// that is `/poc …` is the command (never one in an HTML comment, code, a quote or a list); later ones are ignored (one command per
// comment). A bad command yields a Reply with the error and the usage.
func Parse(body string, cfg ParseConfig) Result {
	cfg = cfg.withDefaults()
	line, ok := findCommandLine(body)
	if !ok {
		return Result{Ignore: true}
	}
	cmd, err := parseLine(line, cfg)
	if err != nil {
		return Result{Reply: ErrorReply(err, cmd.Verb, cfg)}
	}
	return Result{Command: &cmd}
}

// findCommandLine returns the rest of the first `/poc` line (after "/poc") that counts: a line
// of a top-level paragraph (commandLines says which lines those are and why).
func findCommandLine(body string) (string, bool) {
	for _, line := range commandLines(body) {
		trimmed := strings.TrimLeft(strings.TrimRight(line, "\r"), " \t")
		if len(trimmed) < 4 || asciiLower(trimmed[:4]) != "/poc" {
			continue
		}
		rest := trimmed[4:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			continue // "/pocket" is not ours
		}
		return strings.TrimSpace(rest), true
	}
	return "", false
}

// parseLine parses what follows "/poc". On error the returned Command carries the verb when it
// was recognized, so the reply shows that verb's usage.
func parseLine(line string, cfg ParseConfig) (Command, error) {
	cmd := Command{Line: "/poc " + line}
	if len(line) > maxLineLen {
		return Command{}, fmt.Errorf("%w: the command line is %d characters long, more than %d", ErrSyntax, len(line), maxLineLen)
	}
	words, err := splitWords(line)
	if err != nil {
		return Command{}, err
	}
	if len(words) == 0 {
		cmd.Verb = VerbHelp
		return cmd, nil
	}
	verb := Verb(asciiLower(words[0]))
	if !knownVerb(verb) {
		return Command{}, fmt.Errorf("%w: unknown command %s", ErrSyntax, Quote(words[0]))
	}
	cmd.Verb = verb
	args := words[1:]
	for _, a := range args {
		if a == "--help" || a == "-h" {
			return Command{Verb: VerbHelp, Line: cmd.Line, Topic: verb}, nil
		}
	}
	switch verb {
	case VerbUp:
		err = parseUp(&cmd, args, cfg)
	case VerbExtend:
		err = parseExtend(&cmd, args, cfg)
	case VerbPause:
		for _, a := range args {
			if asciiLower(a) != "--release-ips" {
				err = fmt.Errorf("%w: `pause` takes only --release-ips, got %s", ErrSyntax, Quote(a))
				break
			}
			cmd.ReleaseIPs = true
		}
	case VerbHelp:
		if len(args) > 1 {
			err = fmt.Errorf("%w: `help` takes at most one word, the command to explain", ErrSyntax)
		} else if len(args) == 1 {
			topic := Verb(asciiLower(args[0]))
			if !knownVerb(topic) {
				err = fmt.Errorf("%w: no help on %s: not a command", ErrSyntax, Quote(args[0]))
			}
			cmd.Topic = topic
		}
	default:
		if len(args) > 0 {
			err = fmt.Errorf("%w: `%s` takes no arguments, got %s", ErrSyntax, verb, Quote(args[0]))
		}
	}
	return cmd, err
}

func knownVerb(v Verb) bool {
	for _, k := range Verbs {
		if k == v {
			return true
		}
	}
	return false
}

// splitWords splits like a POSIX shell without expansion: blanks separate words, '…' is literal,
// "…" allows \" and \\, a backslash outside quotes escapes the next character.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%w: unterminated %c quote", ErrSyntax, quote)
	}
	if escaped {
		return nil, fmt.Errorf("%w: the line ends with a lone backslash", ErrSyntax)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func parseExtend(cmd *Command, args []string, cfg ParseConfig) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: `extend` needs exactly one duration, e.g. `/poc extend 4h`", ErrSyntax)
	}
	d, err := ParseDuration(strings.TrimPrefix(args[0], "+"))
	if err != nil {
		return err
	}
	if d > cfg.MaxTTL {
		return fmt.Errorf("%w: cannot extend by %s: the maximum is %s", ErrSyntax, FormatDuration(d), FormatDuration(cfg.MaxTTL))
	}
	cmd.Extend = d
	return nil
}

// upFlags: the comment flags of the settings table, by name.
var upFlags = func() map[string]settings.Setting {
	m := map[string]settings.Setting{}
	for _, s := range settings.CommentFlags() {
		m[s.Comment] = s
	}
	return m
}()

func parseUp(cmd *Command, args []string, cfg ParseConfig) error {
	o := &cmd.Up
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			return fmt.Errorf("%w: unexpected argument %s: `up` takes only --flags", ErrSyntax, Quote(a))
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		name = asciiLower(name)
		if name == "admin-cidrs" || name == "extension" { // forgive the obvious plural/singular slip
			name = map[string]string{"admin-cidrs": "admin-cidr", "extension": "extensions"}[name]
		}
		flagDef, ok := upFlags[name]
		takesValue := flagDef.Kind != settings.Bool
		if !ok {
			return fmt.Errorf("%w: unknown flag %s for `up`", ErrSyntax, Quote("--"+name))
		}
		isList := flagDef.Kind == settings.List
		if seen[name] && !isList {
			return fmt.Errorf("%w: --%s given twice", ErrSyntax, name)
		}
		seen[name] = true
		if !takesValue {
			b := true
			if hasValue {
				var err error
				if b, err = settings.ParseBool(value); err != nil {
					return fmt.Errorf("%w: --%s is a switch: give it alone or as --%s=false, not %s", ErrSyntax, name, name, Quote(value))
				}
			}
			if name == "dry-run" {
				o.DryRun = b
			} else {
				o.set(flagDef.Name, b)
			}
			continue
		}
		var values []string
		if hasValue {
			values = append(values, value)
		} else {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return fmt.Errorf("%w: --%s needs a value", ErrSyntax, name)
			}
			i++
			values = append(values, args[i])
		}
		if isList {
			// "--admin-cidr A B C": the following non-flag words belong to the list too.
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
				values = append(values, args[i])
			}
		}
		if name == "ttl" {
			d, err := parseTTL(values[0], cfg)
			if err != nil {
				return err
			}
			o.TTL = d
			continue
		}
		v, err := upValue(name, values, o.list(flagDef.Name), cfg)
		if err != nil {
			return err
		}
		if l, isList := v.([]string); !isList || len(l) > 0 { // an empty list gives nothing
			o.set(flagDef.Name, v)
		}
	}
	return nil
}

func parseTTL(v string, cfg ParseConfig) (time.Duration, error) {
	d, err := ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < cfg.MinTTL || d > cfg.MaxTTL {
		return 0, fmt.Errorf("%w: --ttl %s is outside the allowed range %s to %s", ErrSyntax, FormatDuration(d), FormatDuration(cfg.MinTTL), FormatDuration(cfg.MaxTTL))
	}
	return d, nil
}

// upValue checks and normalizes the value of the cluster setting of flag name (the comment's
// words values, after the list so far for a list), as UpOptions.Spec holds it.
func upValue(name string, values, list []string, cfg ParseConfig) (any, error) {
	v := values[0]
	switch name {
	case "talos":
		n, err := settings.NormalizeTalosVersion(v)
		if err != nil || len(v) > 32 {
			return nil, fmt.Errorf("%w: --talos %s is not a version like %s", ErrSyntax, Quote(v), settings.DefaultTalosVersion)
		}
		if newerMinor(n, cfg.MaxTalosMinor) {
			return nil, fmt.Errorf("%w: --talos %s is newer than %s, the newest series this bot can configure", ErrSyntax, n, cfg.MaxTalosMinor)
		}
		return n, nil
	case "admin-cidr":
		return upList(values, list, "admin CIDRs", func(part string) (string, error) {
			p, err := parseCIDR(part)
			return p.String(), err
		})
	case "extensions":
		return upList(values, list, "extensions", func(part string) (string, error) {
			if settings.CheckExtension(part) != nil {
				return "", fmt.Errorf("%w: extension %s is not a name like siderolabs/iscsi-tools", ErrSyntax, Quote(part))
			}
			return part, nil
		})
	case "dns-zone":
		z := strings.TrimSuffix(asciiLower(v), ".")
		if err := settings.CheckDNSZone(z); err != nil {
			return nil, fmt.Errorf("%w: --dns-zone %s: %s", ErrSyntax, Quote(v), err.Error())
		}
		return z, nil
	case "cp-count":
		n, err := strconv.Atoi(v)
		if err != nil || settings.CheckCPCount(strconv.Itoa(n)) != nil {
			return nil, fmt.Errorf("%w: --cp-count %s: give 1, 3 or 5 (etcd needs an odd quorum)", ErrSyntax, Quote(v))
		}
		return n, nil
	case "cp-type", "worker-offer":
		t := asciiUpper(v)
		if settings.CheckOffer(t) != nil {
			return nil, fmt.Errorf("%w: --%s %s is not a Scaleway offer name like PLAY2-NANO or EM-A116X-SSD", ErrSyntax, name, Quote(v))
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w: --%s takes no value here", ErrSyntax, name)
}

// upList is list with the comma-separated parts of words, each read by part; at most maxListLen.
func upList(words, list []string, what string, part func(string) (string, error)) ([]string, error) {
	out := append([]string(nil), list...)
	for _, w := range words {
		for p := range strings.SplitSeq(w, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			v, err := part(p)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	if len(out) > maxListLen {
		return nil, fmt.Errorf("%w: at most %d %s", ErrSyntax, maxListLen, what)
	}
	return out, nil
}

func parseCIDR(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%w: admin CIDR %s is neither an address nor a CIDR like 203.0.113.0/24", ErrSyntax, Quote(s))
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: admin CIDR %s is not a CIDR like 203.0.113.0/24", ErrSyntax, Quote(s))
	}
	if m := p.Masked(); m != p {
		// Refused rather than silently widened: the user should see what the rule will allow.
		return netip.Prefix{}, fmt.Errorf("%w: admin CIDR %s has host bits set: did you mean %s?", ErrSyntax, Quote(s), m)
	}
	return p, nil
}

// newerMinor reports whether version v (vX.Y.Z…) is in a series newer than max ("vX.Y").
func newerMinor(v, max string) bool {
	maj, min, ok := majorMinor(v)
	mmaj, mmin, ok2 := majorMinor(max)
	if !ok || !ok2 {
		return false
	}
	return maj > mmaj || (maj == mmaj && min > mmin)
}

func majorMinor(v string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	return a, b, err1 == nil && err2 == nil
}

// ParseDuration reads a comment's duration with the one grammar of every setting
// (settings.ParseDuration: Go durations plus days, "2d", "1d12h", "1.5d"); here it must be
// positive.
func ParseDuration(s string) (time.Duration, error) {
	total, err := settings.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is not a duration like 8h, 90m or 2d", ErrSyntax, Quote(s))
	}
	if total <= 0 {
		return 0, fmt.Errorf("%w: the duration %s must be positive", ErrSyntax, Quote(s))
	}
	return total, nil
}

// FormatDuration prints d compactly for humans: "8h", "1d 4h", "2h 30m", "45s".
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	}
	d = d.Round(time.Minute)
	days, d := d/(24*time.Hour), d%(24*time.Hour)
	hours, d := d/time.Hour, d%time.Hour
	mins := d / time.Minute
	var parts []string
	if days > 0 {
		parts = append(parts, fmt.Sprintf("%dd", days))
	}
	if hours > 0 {
		parts = append(parts, fmt.Sprintf("%dh", hours))
	}
	if mins > 0 && days == 0 {
		parts = append(parts, fmt.Sprintf("%dm", mins))
	}
	if len(parts) == 0 {
		return "0m"
	}
	return strings.Join(parts, " ")
}
