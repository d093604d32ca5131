// Package doctor checks a live pocbot installation (`bot doctor`) and renders a checklist in which
// every item that is not right says what to do. The checks are functions of their clients: GitHub
// (a repository admin's token and the App's JWT), Scaleway IAM, and whatever the caller adds (the
// state store's backend check). It changes nothing.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Status of one item.
type Status int

// Statuses, worst last.
const (
	Skip Status = iota // not checked (what to give to check it is in Fix)
	OK
	Warn
	Fail
)

func (s Status) mark() string {
	return [...]string{"–", "✓", "!", "✗"}[s]
}

// Item is one line of the checklist.
type Item struct {
	Name   string // what is checked, e.g. "secrets"
	Status Status
	Detail string // what was found
	Fix    string // what to do (for Warn, Fail and Skip)
}

// Check produces items.
type Check func(ctx context.Context) []Item

// Run runs the checks in order.
func Run(ctx context.Context, checks ...Check) Checklist {
	var out Checklist
	for _, c := range checks {
		out = append(out, c(ctx)...)
	}
	return out
}

// Checklist is the result.
type Checklist []Item

// Failed lists the names of the failed items.
func (c Checklist) Failed() []string {
	var out []string
	for _, it := range c {
		if it.Status == Fail {
			out = append(out, it.Name)
		}
	}
	return out
}

// Render writes the checklist, one item a line, each fix indented under its item.
func (c Checklist) Render(w io.Writer) {
	for _, it := range c {
		fmt.Fprintf(w, "%s %-24s %s\n", it.Status.mark(), it.Name, it.Detail)
		if it.Status != OK && it.Fix != "" {
			for _, l := range strings.Split(it.Fix, "\n") {
				fmt.Fprintf(w, "    → %s\n", l)
			}
		}
	}
	if f := c.Failed(); len(f) > 0 {
		fmt.Fprintf(w, "\n%d failed: %s\n", len(f), strings.Join(f, ", "))
	} else {
		fmt.Fprintf(w, "\nno failure\n")
	}
}

func one(name string, s Status, detail, fix string) []Item {
	return []Item{{Name: name, Status: s, Detail: detail, Fix: fix}}
}
