package settings

import (
	"fmt"
	"strings"
)

// Generated files, relative to the repository root.
const (
	ExamplePath = "deploy/poc.example.yml"
	DocPath     = "docs/configuration.md"
)

// ExampleYAML is deploy/poc.example.yml: every key of .github/poc.yml at its default, with its
// help; parsed by internal/repoconfig it is exactly repoconfig.Default() (a test checks).
func ExampleYAML() []byte {
	var b strings.Builder
	b.WriteString("# Generated from internal/settings by `make generate`: do not edit.\n")
	b.WriteString("# .github/poc.yml on the repository's DEFAULT branch (never read from a pull request's head, so that\n")
	b.WriteString("# a PR cannot raise its own budget). Every key is optional; the values below are the defaults.\n")
	b.WriteString("# Unknown keys are refused with an error naming them. See docs/configuration.md.\n")
	for _, s := range RepoKeys() {
		v := s.Default
		if s.Kind == String && v != "" {
			v = fmt.Sprintf("%q", v)
		}
		if s.Kind == List && v == "" {
			v = "[]"
		}
		if s.Kind == Map && v == "" {
			v = "{}"
		}
		line := s.RepoKey + ": " + v
		fmt.Fprintf(&b, "%-28s # %s\n", line, s.Help)
	}
	return []byte(b.String())
}

// Markdown is docs/configuration.md: the whole table, by where a value is set.
func Markdown() []byte {
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/settings by `make generate`: do not edit. -->\n")
	b.WriteString("# Configuration\n\n")
	b.WriteString("Every value a user can set, from one table (`internal/settings`). A value may be set in up to four places: ")
	b.WriteString("a flag of `/poc up` in a comment, a flag of the `bot` CLI, an environment variable of the workflow ")
	b.WriteString("(an input of the Action), or a key of `.github/poc.yml` on the default branch.\n\n")
	b.WriteString("## Flags of `/poc up` and of `bot up`\n\n")
	b.WriteString("| comment | CLI | environment | `.github/poc.yml` | default | rule | meaning |\n|---|---|---|---|---|---|---|\n")
	for _, s := range Table {
		if s.Comment == "" && (s.CLI == "" || s.RepoKey != "") {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", code(flag(s.Comment, "")), code(flag(s.CLI, s.CLICommand)), code(s.Env), code(s.RepoKey), code(s.Default), cell(s.Rule), cell(s.Help))
	}
	b.WriteString("\n## `.github/poc.yml`\n\n")
	b.WriteString("Read from the repository's default branch only. The example with every default is `deploy/poc.example.yml`.\n\n")
	b.WriteString("| key | default | rule | meaning | also |\n|---|---|---|---|---|\n")
	for _, s := range RepoKeys() {
		var also []string
		if s.Comment != "" {
			also = append(also, "`/poc up --"+s.Comment+"`")
		}
		if s.CLI != "" {
			also = append(also, "`"+flag(s.CLI, s.CLICommand)+"`")
		}
		if s.Env != "" {
			also = append(also, "`"+s.Env+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.RepoKey, code(s.Default), cell(s.Rule), cell(s.Help), cell(strings.Join(also, ", ")))
	}
	b.WriteString("\n## Workflow environment (Action inputs)\n\n")
	b.WriteString("Secrets go in the GitHub environment's secrets, the rest in its variables.\n\n")
	b.WriteString("| variable | secret | default | meaning |\n|---|---|---|---|\n")
	for _, s := range EnvOnly() {
		secret := ""
		if s.Secret {
			secret = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Env, secret, code(s.Default), cell(s.Help))
	}
	return []byte(b.String())
}

func flag(name, cmd string) string {
	if name == "" {
		return ""
	}
	if cmd == "" {
		return "--" + name
	}
	return "bot " + cmd + " --" + name
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
