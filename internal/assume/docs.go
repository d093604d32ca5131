package assume

import (
	"fmt"
	"strings"
)

// DocPath is the generated register, relative to the repository root.
const DocPath = "docs/assumptions.md"

// Markdown is docs/assumptions.md: the whole register, one section per row.
func Markdown() []byte {
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/assume by `make generate`: do not edit. -->\n")
	b.WriteString("# Assumptions register\n\n")
	b.WriteString("Every behaviour of the systems pocbot talks to that it relies on and that no source settles. ")
	b.WriteString("For each: what the bot assumes, every plausible reading and whether the bot handles it, the probe of ")
	b.WriteString("`bot doctor --live` that settles it on your account, what that probe costs and what it leaves behind. ")
	b.WriteString("The stand-ins play each reading (`bot sim --reading ID=VALUE`, `bot sim --readings` lists them); ")
	b.WriteString("`bot doctor --live` fails on a reading the bot does not handle, naming it. ")
	fmt.Fprintf(&b, "All probes together cost %s.\n\n", euros(TotalCost()))
	b.WriteString("| id | system | assumes | readings (✓ handled, ✗ not) | probe cost |\n|---|---|---|---|---|\n")
	for _, r := range Register {
		var vals []string
		for _, x := range r.Readings {
			vals = append(vals, pick(x.Handled, "✓ ", "✗ ")+value(r, x, " (stand-in default)"))
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s |\n", r.ID, r.ID, r.System, cell(r.Assumes), strings.Join(vals, "<br>"), euros(r.Cost))
	}
	for _, r := range Register {
		fmt.Fprintf(&b, "\n## %s\n\n", r.ID)
		fmt.Fprintf(&b, "**%s.** The bot assumes %s.\n\n", r.System, r.Assumes)
		b.WriteString("| reading | what the system does | handled | how / what to do |\n|---|---|---|---|\n")
		for _, x := range r.Readings {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", value(r, x, " (default)"), cell(x.Means), pick(x.Handled, "yes", "**no**"), cell(x.How))
		}
		fmt.Fprintf(&b, "\n**Probe** (`bot doctor --live`): %s. **Cost:** %s. **Leaves:** %s.\n\n", r.Probe, euros(r.Cost), r.Leaves)
		b.WriteString("**Sources:**\n\n")
		for _, s := range r.Sources {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return []byte(b.String())
}

// value is a reading's value as code, marked when it is the row's default.
func value(r Row, x Reading, defaultMark string) string {
	return "`" + x.Value + "`" + pick(x.Value == r.Default, defaultMark, "")
}

func pick(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}

// euros prints nano-euros for people: "free", or "≤ € 0.004".
func euros(nanos int64) string {
	if nanos == 0 {
		return "free"
	}
	s := fmt.Sprintf("%.3f", float64(nanos)/1e9)
	return "≤ € " + s
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
