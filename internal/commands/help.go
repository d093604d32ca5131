package commands

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/settings"
)

type verbDoc struct {
	synopsis string
	summary  string
}

var verbDocs = map[Verb]verbDoc{
	VerbUp:         {"/poc up [flags]", "create this issue's cluster, or converge it to the flags given"},
	VerbDown:       {"/poc down", "destroy the cluster and everything it owns, in dependency order"},
	VerbPause:      {"/poc pause [--release-ips]", "snapshot etcd into the state bucket, then give the machines back: the reserved IPs, the certificates and the kubeconfig stay valid, and it costs almost nothing until `/poc resume`"},
	VerbResume:     {"/poc resume", "bring a paused cluster back on the same IPs, with everything that was in it"},
	VerbExtend:     {"/poc extend DURATION", "push the expiry back, e.g. `/poc extend 4h` or `/poc extend 1d`"},
	VerbKubeconfig: {"/poc kubeconfig", "a fresh short-lived link to the kubeconfig, encrypted to your GitHub SSH keys"},
	VerbStatus:     {"/poc status", "phase, resources, health, expiry, lock holder, cost so far"},
	VerbCost:       {"/poc cost", "price per resource per hour, day and 730-hour month; accrued; until expiry"},
	VerbHelp:       {"/poc help [COMMAND]", "this text (also a bare `/poc`)"},
}

// HelpText is the reply to `/poc help`: every command, who may run it, and the flags of `up`
// with this repository's bounds. topic narrows it to one command ("" or VerbHelp: all).
func HelpText(cfg ParseConfig, topic Verb) string {
	cfg = cfg.withDefaults()
	var b strings.Builder
	if topic != "" && topic != VerbHelp && knownVerb(topic) {
		d := verbDocs[topic]
		fmt.Fprintf(&b, "**%s** — %s. Needs **%s** permission on the repository.\n", inlineCode(d.synopsis), d.summary, Required(topic))
		if topic == VerbUp {
			b.WriteString("\n")
			b.WriteString(upFlagsTable(cfg))
		}
		if topic == VerbExtend {
			fmt.Fprintf(&b, "\nThe new expiry may be at most %s from now. A `poc/keep` label on the issue pauses expiry altogether.\n", FormatDuration(cfg.MaxTTL))
		}
		return b.String()
	}
	b.WriteString("**pocbot** — a Talos Kubernetes cluster on Scaleway for this issue or pull request. One command per comment, on a line of its own.\n\n")
	b.WriteString("| command | what it does | needs |\n|---|---|---|\n")
	for _, v := range Verbs {
		d := verbDocs[v]
		fmt.Fprintf(&b, "| %s | %s | %s |\n", inlineCode(d.synopsis), d.summary, Required(v))
	}
	b.WriteString("\n")
	b.WriteString(upFlagsTable(cfg))
	b.WriteString("\nDurations: Go forms plus days — `90m`, `8h`, `1h30m`, `2d`. Quote a value with spaces: `--extensions 'a,b'`.\n")
	b.WriteString("Every cluster expires; the bot warns once before tearing it down. A `poc/keep` label on the issue pauses expiry.\n")
	return b.String()
}

func upFlagsTable(cfg ParseConfig) string {
	var b strings.Builder
	b.WriteString("Flags of `/poc up`:\n\n| flag | default | meaning |\n|---|---|---|\n")
	for _, s := range settings.CommentFlags() {
		synopsis := "--" + s.Comment
		if s.Arg != "" {
			synopsis += " " + s.Arg
		}
		def, help := s.Default, s.Help
		switch {
		case s.Name == "ttl": // the repository's bounds, not the table's defaults
			def = FormatDuration(cfg.DefaultTTL)
			help = fmt.Sprintf("%s; from %s to %s", help, FormatDuration(cfg.MinTTL), FormatDuration(cfg.MaxTTL))
		case s.Name == "talos":
			help = fmt.Sprintf("%s, series %s or older", help, cfg.MaxTalosMinor)
		case s.Kind == settings.Bool && def == "false":
			def = "off"
		case def == "":
			def = "none"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", inlineCode(synopsis), inlineCode(def), help)
	}
	b.WriteString("\nExample:\n\n```\n/poc up --ttl 4h --admin-cidr 203.0.113.0/24 --extensions siderolabs/iscsi-tools\n```\n")
	return b.String()
}

// ErrorReply is the reply to a command that did not parse: what is wrong (user text already
// escaped by the parser) and the usage of the verb when it was recognized, of all verbs
// otherwise. Nothing runs.
func ErrorReply(err error, verb Verb, cfg ParseConfig) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, ErrSyntax.Error()+": ")
	if !errors.Is(err, ErrSyntax) {
		msg = Escape(clip(msg, 8*maxErrorBytes))
	}
	msg = clip(msg, maxErrorBytes) // the grammar's messages are short; a wrapped error may not be
	var b strings.Builder
	fmt.Fprintf(&b, "😕 **Not run:** %s.\n\nNothing was created or changed. Usage:\n\n", msg)
	topic := verb
	if topic == "" {
		topic = VerbHelp
	}
	b.WriteString(HelpText(cfg, topic))
	return fit(b.String())
}
