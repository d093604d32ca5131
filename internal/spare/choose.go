package spare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/settings"
)

// Candidate is a spare a claim may take: its record and the spec it was built with (from its
// encrypted state; nil when it could not be read).
type Candidate struct {
	Record
	Spec *provision.Spec
}

// Want is what a claim asks for.
type Want struct {
	// Spec is the cluster asked for: the repository's defaults with the command's flags.
	Spec provision.Spec
	// Offers are the worker offers the up may take (worker_offers), in order; empty: the spec's.
	Offers []string
	// Repository asks; Share: it shares its spares (pool.share), so it may take the others'.
	Repository string
	Share      bool
	// Kubernetes is the Kubernetes version this bot pins for the spec's Talos version.
	Kubernetes string
	// Cold: the requester asked for a new cluster (`bot up --cold`).
	Cold bool
}

// Skip is a spare a claim did not take, and why.
type Skip struct{ Spare, Why string }

// Choice is a claim's decision: the spare to take (nil: the cold path), what the claim then
// changes in place on it (the command's flags a running cluster takes, such as admin CIDRs), and
// why every other spare was not taken, freshest first.
type Choice struct {
	Spare   *Candidate
	InPlace []provision.Change
	Skipped []Skip
	// Cold says why the claim takes the cold path when no spare was even looked at (--cold, no
	// spare in the pool); "" otherwise.
	Cold string
}

// Why is the choice in words, for the reply: which spare and how fresh, or why the cold path.
func (c Choice) Why(now time.Time) string {
	if c.Spare != nil {
		s := fmt.Sprintf("claimed a warm spare (age %s): %s", roundAge(now.Sub(c.Spare.Ready)), c.Spare.Name)
		if !c.Spare.Checked.IsZero() && c.Spare.Checked.After(c.Spare.Ready) {
			s += fmt.Sprintf(", last checked %s ago", roundAge(now.Sub(c.Spare.Checked)))
		}
		return s
	}
	if c.Cold != "" {
		return c.Cold
	}
	parts := make([]string, 0, len(c.Skipped))
	for _, s := range c.Skipped {
		parts = append(parts, s.Spare+" "+s.Why)
	}
	return "no spare fits: " + strings.Join(parts, "; ")
}

func roundAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

// Reasons of the cold path that look at no spare.
const (
	ColdAsked   = "cold path asked (--cold)"
	ColdNoSpare = "no spare in the pool"
)

// Choose is the claim's choice at now among cands (the spares of the bucket's state, read once):
// the freshest spare that is claimable (Record.Claimable), offered to the asking repository
// (Record.Offered), and whose spec differs from the asked one only in what a running cluster
// changes in place (provision.Diff). A worker offer the repository's worker_offers allows counts as
// the asked one. A DNS zone is not taken in place: a spare's API certificate names no DNS name
// (spares are built without one), and its SANs are not changed on a running cluster here, so an
// up with --dns-zone takes the cold path, saying so.
func Choose(cands []Candidate, want Want, now time.Time) Choice {
	if want.Cold {
		return Choice{Cold: ColdAsked}
	}
	if len(cands) == 0 {
		return Choice{Cold: ColdNoSpare}
	}
	order := slices.Clone(cands)
	slices.SortStableFunc(order, func(a, b Candidate) int { return b.Ready.Compare(a.Ready) }) // freshest first
	var c Choice
	for i := range order {
		cand := &order[i]
		inPlace, why := fits(cand, want, now)
		if why != "" {
			c.Skipped = append(c.Skipped, Skip{Spare: cand.Name, Why: why})
			continue
		}
		if c.Spare == nil {
			c.Spare, c.InPlace = cand, inPlace
		}
	}
	if c.Spare != nil {
		c.Skipped = nil // the others did not matter
	}
	return c
}

// fits says why cand cannot serve want ("" when it can), and what a claim changes in place.
func fits(cand *Candidate, want Want, now time.Time) ([]provision.Change, string) {
	if why := cand.Claimable(now, want.Kubernetes); why != "" {
		return nil, why
	}
	if !cand.Offered(want.Repository, want.Share) {
		if !cand.Shared {
			return nil, "belongs to " + cand.Repository + ", which does not share its spares (pool.share)"
		}
		return nil, "belongs to " + cand.Repository + "; this repository does not share its spares (pool.share), so it takes none of theirs"
	}
	if cand.Spec == nil {
		return nil, "its state cannot be read"
	}
	asked := want.Spec
	if slices.Contains(want.Offers, cand.Spec.BaremetalOffer) {
		asked.BaremetalOffer = cand.Spec.BaremetalOffer // an offer the up could have taken itself
	}
	if asked.DNSZone != cand.Spec.DNSZone {
		return nil, fmt.Sprintf("has no DNS name; --dns-zone %s needs the API certificate to name %s, which a running spare's does not",
			asked.DNSZone, asked.FQDN(asked.DNSNames("CLUSTER").API))
	}
	built := *cand.Spec
	for _, s := range []*provision.Spec{&built, &asked} {
		if s.ServiceAccountKey == "" { // a spec written without the setting (bot up's) is rsa
			s.ServiceAccountKey = settings.DefaultServiceAccountKey
		}
	}
	inPlace, refused := provision.Diff(built, asked)
	if len(refused) > 0 {
		parts := make([]string, 0, len(refused))
		for _, ch := range refused {
			parts = append(parts, fmt.Sprintf("%s %s, asked %s", ch.Field, ch.Old, ch.New))
		}
		return nil, "was built with " + strings.Join(parts, ", ")
	}
	return inPlace, ""
}
