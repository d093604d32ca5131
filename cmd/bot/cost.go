package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/wiring"
)

// quoter prices with Scaleway's APIs first (catalog, then products and offers), the dated table last.
func (a *app) quoter() (*cost.Quoter, error) {
	client, err := wiring.ScalewayClient(a.getenv)
	if err != nil {
		return nil, err
	}
	return cost.NewQuoter(cost.APISources(client)...), nil
}

func costCommand() *command {
	var name string
	var allowUnknown bool
	return &command{
		name:    "cost",
		summary: "price a cluster per resource: hourly, daily, monthly, accrued, until expiry",
		env:     envList(envStore, envSCW),
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			e.Bool(&allowUnknown, "allow-unknown-prices", "", true, "print a table even when a price is unknown")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			ops, closeOps, err := a.clusterOps(ctx, name)
			if err != nil {
				return err
			}
			defer closeOps()
			out, err := ops.Run(ctx, clusterops.VerbCost, clusterops.Intent{Cluster: name, Scope: a.repoScope()}, nil)
			if err != nil {
				return err
			}
			if !out.Exists {
				return fmt.Errorf("cluster %q: %w (see `bot state ls`)", name, clusterops.ErrNoCluster)
			}
			doc, st := statestore.Document{Header: out.Header}, out.State
			q, err := a.quoter()
			if err != nil {
				return err
			}
			now := time.Now()
			life := time.Duration(0)
			if !doc.Header.Expires.IsZero() {
				life = doc.Header.Expires.Sub(now)
			}
			quote, err := clusterops.QuoteState(ctx, q, doc.Header, st, life, allowUnknown)
			if err != nil {
				return err
			}
			a.printf("cluster %s (%s), created %s\n\n", name, doc.Header.Phase, doc.Header.Created.Format(time.RFC3339))
			return quote.WriteText(a.stdout, cost.Times{Created: doc.Header.Created, Now: now, Expires: doc.Header.Expires})
		},
	}
}

// printPlan is `up --dry-run`: what would be created or changed, and its price; nothing is created.
func (a *app) printPlan(ctx context.Context, w *opsWorld, req clusterops.Intent) error {
	req.DryRun = true
	res, err := w.ops.Up(ctx, req)
	if err != nil {
		return err
	}
	spec, exists, inPlace, refused := res.Spec, res.Exists, res.InPlace, res.Refused
	g := provision.NewGraph()
	if err := w.ops.Build(g, spec); err != nil {
		return err
	}
	byKind := map[string][]string{}
	for _, n := range g.Names() {
		node, _ := g.Node(n)
		byKind[node.Kind] = append(byKind[node.Kind], n)
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if exists {
		a.printf("cluster %s exists: up would converge it\n", req.Cluster)
		for _, c := range inPlace {
			a.printf("  change in place: %s %s → %s\n", c.Field, c.Old, c.New)
		}
		for _, c := range refused {
			a.printf("  refused:         %s %s → %s (%s)\n", c.Field, c.Old, c.New, c.Why)
		}
	} else {
		a.printf("cluster %s does not exist: up would create\n", req.Cluster)
	}
	for _, k := range kinds {
		a.printf("  %-24s %d  %v\n", k, len(byKind[k]), byKind[k])
	}
	printPreflight(a, res.Preflight)
	if e := res.ETA; e != nil {
		a.printf("ETA: %s\n", commands.PreflightView{ETA: e.D, ETAFrom: e.From, Path: e.Path.String()}.ETAText())
	}
	a.printf("\n")
	if err := res.Quote.WriteText(a.stdout, cost.Times{Now: time.Now(), Expires: time.Now().Add(req.TTL)}); err != nil {
		return err
	}
	fmt.Fprintln(a.stderr, "dry run: nothing was created")
	return nil
}
