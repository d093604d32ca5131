package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

func poolLsCommand() *command {
	return &command{
		name:     "ls",
		summary:  "list the warm spares and the parked workers (decrypts the pool document and the spares' states)",
		env:      envStore,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			s, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := printSpares(ctx, a, s); err != nil {
				return err
			}
			d, err := (&poolstore.Pool{Store: s}).List(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tIP\tZONE\tOFFER\tTALOS\tSCHEMATIC\tPARKED FROM\tPARKED UNTIL\tCLAIMED BY")
			for _, w := range d.Workers {
				sch := w.Schematic
				if len(sch) > 12 {
					sch = sch[:12]
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.ServerID, w.IP, w.Zone, w.Offer, w.TalosVersion, sch,
					orDash(w.ParkedFrom), w.ParkedUntil.UTC().Format(time.RFC3339), orDash(w.ClaimedBy))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			a.printf("%d parked workers (billed while parked)\n", len(d.Workers))
			return nil
		},
	}
}

func poolRmCommand() *command {
	var server, spareName string
	return &command{
		name:    "rm",
		summary: "tear a warm spare down (--spare), or delete a parked worker and drop it from the pool (--server, only while it is tagged pocbot-parked)",
		env:     envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.String(&server, "server", "", "", "the parked server's id, as `bot pool ls` lists it")
			e.String(&spareName, "spare", "", "", "the spare's name, as `bot pool ls` lists it")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			switch {
			case server == "" && spareName == "":
				return errors.New("pool rm: give --spare NAME or --server ID: copy it from `bot pool ls`")
			case server != "" && spareName != "":
				return errors.New("pool rm: give --spare or --server, not both")
			}
			w, err := a.openWorld(ctx)
			if err != nil {
				return err
			}
			defer w.Close()
			if spareName != "" {
				return removeSpare(ctx, a, w, spareName)
			}
			return removeParked(ctx, a, w, server)
		},
	}
}

// removeSpare tears the spare name down (a down, under its lock: a claim holding it wins).
func removeSpare(ctx context.Context, a *app, w *opsWorld, name string) error {
	doc, err := w.store.Get(ctx, name)
	if errors.Is(err, statestore.ErrNotFound) {
		return fmt.Errorf("pool rm: no spare %s (`bot pool ls` lists them)", name)
	}
	if err != nil {
		return err
	}
	if !spare.Is(doc.Header) {
		return fmt.Errorf("pool rm: %s is a cluster, not a spare: `bot down --cluster %s` removes it", name, name)
	}
	if err := inScope(a.repoScope(), doc.Header); err != nil {
		return fmt.Errorf("pool rm: %w", err)
	}
	in := a.intent(name, "pool rm", w, nil)
	in.Repository, in.NoCancel = doc.Header.Repository, true
	res, err := w.ops.Down(ctx, in)
	if err != nil {
		return fmt.Errorf("pool rm %s: %w", name, err)
	}
	n := 0
	if res.Report != nil {
		n = len(res.Report.Deleted)
	}
	a.printf("tore spare %s down (%d resources deleted)\n", name, n)
	return nil
}

// removeParked deletes a parked worker and drops it from the pool.
func removeParked(ctx context.Context, a *app, w *opsWorld, server string) error {
	p := &poolstore.Pool{Store: w.store}
	d, err := p.List(ctx)
	if err != nil {
		return err
	}
	entry, ok := d.Find(server)
	if !ok {
		return fmt.Errorf("pool rm: server %s is not in the pool (`bot pool ls` lists it)", server)
	}
	deleted, err := w.driver.DeleteParked(ctx, entry.Zone, server)
	if err != nil {
		return fmt.Errorf("pool rm %s: %w", server, err)
	}
	if err := p.Remove(ctx, server); err != nil {
		return err
	}
	if !deleted {
		a.printf("server %s no longer carries the parked tag (adopted): dropped from the pool, not deleted\n", server)
		return nil
	}
	a.printf("deleted parked worker %s and dropped it from the pool\n", server)
	return nil
}

// poolFillCommand builds warm spares up to the pool's size (clusterops.PoolPass): what the
// schedule runs, and what an operator runs to warm the pool now.
func poolFillCommand() *command {
	var size int
	return &command{
		name: "fill",
		summary: "build warm spares of this repository (GITHUB_REPOSITORY) up to the pool's size; replace stale, failed " +
			"and dead ones, park or check them as the schedule's pass does (bounds: " + repoconfig.Path + " of the default branch " +
			"with the App's settings, as `bot handle` reads it; without them ./" + repoconfig.Path + ", else the defaults)",
		env: envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.SettingWith(&size, "pool.size", -1, "spares to keep (default: pool.size of "+repoconfig.Path+"; 0 empties the pool)")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			repo := a.repoScope()
			if repo == "" {
				return errors.New("pool fill: spares belong to a repository: run it in the repository's workflow, or set GITHUB_REPOSITORY=owner/name")
			}
			bounds, from, err := a.poolBounds(ctx, repo)
			if err != nil {
				return fmt.Errorf("pool fill: %w", err)
			}
			if size >= 0 {
				bounds.Pool.Size = size
			}
			if err := bounds.Pool.Validate(); err != nil {
				return fmt.Errorf("pool fill: %w", err)
			}
			w, err := a.openWorld(ctx)
			if err != nil {
				return err
			}
			defer w.Close()
			spec := provision.DefaultSpec()
			spec.ImageBucket, spec.ServiceAccountKey = w.bucketName, bounds.ServiceAccountKey
			plan, steps, err := w.ops.PoolPass(ctx, clusterops.PoolRequest{Repository: repo, Spec: spec, Patch: poolPatch(bounds.Pool),
				Bounds: &bounds, RequestedBy: cmpOr(a.getenv("GITHUB_ACTOR"), "operator"), RunID: a.getenv("GITHUB_RUN_ID")})
			a.printf("pool of %s (%s): %s\n", repo, from, plan.Why)
			for _, s := range steps {
				line := fmt.Sprintf("  %s %s: %s", s.Action, s.Spare, s.Why)
				if s.Err != nil {
					line += " — failed: " + s.Err.Error()
				}
				a.printf("%s\n", line)
			}
			if len(steps) == 0 {
				a.printf("  nothing to do\n")
			}
			if err != nil {
				return fmt.Errorf("pool fill: %w", err)
			}
			return nil
		},
	}
}

// poolPatch is the spares' spec beyond the repository's defaults: pool.talos, pool.extensions.
func poolPatch(p repoconfig.Pool) clusterops.SpecPatch {
	v := clusterops.SpecPatch{}
	if p.Talos != "" {
		v.Set("talos", p.Talos)
	}
	if len(p.Extensions) > 0 {
		v.Set("extensions", p.Extensions)
	}
	return v
}

// poolBounds are the repository's bounds for its pool, and where they were read: its
// .github/poc.yml on the default branch, as `bot handle` reads it, when GitHub settings are given
// (the workflow's App); without any, ./.github/poc.yml (localRepoConfig).
func (a *app) poolBounds(ctx context.Context, repo string) (repoconfig.RepoConfig, string, error) {
	gh, err := a.reapGitHub(ctx, repo)
	if err != nil {
		return repoconfig.RepoConfig{}, "", err
	}
	if gh != nil {
		rc, err := repoConfig(ctx, gh)
		return rc, repoconfig.Path + " of " + repo + "'s default branch", err
	}
	rc, err := localRepoConfig()
	return rc, "./" + repoconfig.Path + " or the defaults", err
}

// localRepoConfig is ./.github/poc.yml when the working directory is a checkout of the repository
// that has one, else the defaults.
func localRepoConfig() (repoconfig.RepoConfig, error) {
	data, err := os.ReadFile(repoconfig.Path)
	if errors.Is(err, os.ErrNotExist) {
		return repoconfig.Default(), nil
	}
	if err != nil {
		return repoconfig.RepoConfig{}, fmt.Errorf("read %s: %w", repoconfig.Path, err)
	}
	rc, err := repoconfig.Parse(data)
	if err != nil {
		return repoconfig.RepoConfig{}, fmt.Errorf("./%s: %w", repoconfig.Path, err)
	}
	return rc, nil
}

// printSpares lists the bucket's spares: age, spec, health, claim, cost (the daily cost their
// header records; their spec from their state, when it can be read).
func printSpares(ctx context.Context, a *app, s *statestore.Store) error {
	headers, err := s.List(ctx)
	if err != nil && headers == nil {
		return err
	}
	ops := &clusterops.Ops{Store: s}
	now := a.clock()
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SPARE\tREPOSITORY\tPHASE\tAGE\tTALOS\tKUBERNETES\tWORKER\tHEALTH\tCLAIMED BY\tPER DAY")
	n := 0
	for _, h := range headers {
		if !spare.Is(h) {
			continue
		}
		n++
		r, rerr := spare.Of(h)
		age := "building"
		if !r.Ready.IsZero() {
			age = now.Sub(r.Ready).Round(time.Minute).String()
		}
		health := "ok"
		if why := r.Claimable(now, ""); why != "" && r.ClaimedBy == "" {
			health = why
		}
		if rerr != nil {
			health = rerr.Error()
		}
		offer := "?"
		if _, st, lerr := ops.Load(ctx, h.Cluster); lerr == nil {
			offer = st.Spec.BaremetalOffer
		}
		daily := "?"
		if r.DailyNanos > 0 {
			daily = cost.Money{Currency: cost.CurrencyEUR, Nanos: r.DailyNanos}.Format(2)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Cluster, h.Repository, r.Phase, age, orDash(r.Talos),
			orDash(r.Kubernetes), offer, health, orDash(r.ClaimedBy), daily)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	a.printf("%d warm spares (whole clusters, billed running)\n", n)
	if err != nil {
		a.printf("some states could not be read (listed by `bot state ls`): %v\n", err)
	}
	return nil
}
