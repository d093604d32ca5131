package commands

import (
	"errors"
	"fmt"
	"strings"
)

type verbDoc struct {
	synopsis string
	summary  string
}

var verbDocs = map[Verb]verbDoc{
	VerbUp:         {"/poc up [flags]", "create this issue's cluster, or converge it to the flags given"},
	VerbDown:       {"/poc down", "destroy the cluster and everything it owns, in dependency order"},
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
	rows := [][3]string{
		{"--ttl DURATION", FormatDuration(cfg.DefaultTTL), fmt.Sprintf("lifetime, from %s to %s", FormatDuration(cfg.MinTTL), FormatDuration(cfg.MaxTTL))},
		{"--dry-run", "off", "show the plan and its cost; create nothing"},
		{"--admin-cidr CIDR …", "0.0.0.0/0", "who may reach the Kubernetes (6443) and Talos (50000) APIs; repeat it or separate with commas"},
		{"--talos vX.Y.Z", "v1.13.11", fmt.Sprintf("Talos version, series %s or older", cfg.MaxTalosMinor)},
		{"--extensions a,b", "none", "Image Factory system extensions, e.g. siderolabs/iscsi-tools"},
		{"--dns-zone ZONE", "none", "create k8s-poc.CLUSTER.ZONE (API) and edge.CLUSTER.ZONE (worker) in this Scaleway DNS zone; only zones listed under dns_zones in .github/poc.yml"},
		{"--expose-edge", "off", "also open TCP 80/443 on the control planes"},
		{"--cp-count N", "3", "control planes: 1, 3 or 5"},
		{"--cp-type TYPE", "PLAY2-NANO", "control-plane Instance type"},
		{"--worker-offer OFFER", "EM-A116X-SSD", "the Elastic Metal worker's offer"},
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", inlineCode(r[0]), inlineCode(r[1]), r[2])
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
		msg = Escape(msg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "😕 **Not run:** %s.\n\nNothing was created or changed. Usage:\n\n", msg)
	topic := verb
	if topic == "" {
		topic = VerbHelp
	}
	b.WriteString(HelpText(cfg, topic))
	return b.String()
}
