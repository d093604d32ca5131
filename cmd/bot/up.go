package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
)

// specFlags are the overrides of the cluster's defaults (docs/seed.md, The cluster) an operator
// may pass to up: a flag for each setting of the table bound to the spec (its Spec column), by
// setting name. Only the flags given explicitly, or by their variable, change an existing cluster.
type specFlags map[string]any

func (s specFlags) define(e *envFlags) {
	for _, row := range settings.Table {
		if row.Spec == "" || row.CLI == "" {
			continue
		}
		p := newFlagValue(row)
		e.Setting(p, row.Name)
		s[row.Name] = p
	}
}

// values are the settings given on the command line or by environment. The person's SSH key is
// given as a file: its value is the key the file holds.
func (s specFlags) values(fs *flag.FlagSet, getenv func(string) string) (settings.Values, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	v := settings.Values{}
	for name, p := range s {
		row := settings.Lookup(name)
		if !given[row.CLI] && (row.Env == "" || !settings.Env(getenv).Given(name)) {
			continue
		}
		x := flagValue(p)
		if name == "ssh-public-key-file" {
			path := x.(string)
			if path == "" {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read --ssh-public-key-file: %w", err)
			}
			x = strings.TrimSpace(string(b))
		}
		v.Set(name, x)
	}
	return v, nil
}

// budgetFlags are the bounds of an up run by the CLI: the settings a repository writes in
// `.github/poc.yml`, here from flags and environment (POC_MAX_CLUSTERS, POC_MAX_DAILY_EUR,
// POC_ALLOW_UNKNOWN_PRICES), so that `bot up` is budgeted as `/poc up` is.
type budgetFlags struct {
	maxClusters  int
	maxDailyEUR  string
	allowUnknown bool
}

// open is lk.open for the verbs that may start machines (up, resume): the budget bounds the
// intent, as the repository's .github/poc.yml bounds a comment's.
func (b *budgetFlags) open(ctx context.Context, a *app, lk *lockFlags, name, verb string, patch clusterops.SpecPatch) (*opsWorld, clusterops.Intent, error) {
	bounds, err := b.bounds()
	if err != nil {
		return nil, clusterops.Intent{}, err
	}
	w, req, err := lk.open(ctx, a, name, verb, patch)
	if err != nil {
		return nil, req, err
	}
	req.Bounds = bounds
	return w, req, nil
}

func (b *budgetFlags) define(e *envFlags) {
	e.Setting(&b.maxClusters, "max_clusters")
	e.Setting(&b.maxDailyEUR, "max_daily_eur")
	e.Setting(&b.allowUnknown, "allow_unknown_prices")
}

// bounds are the defaults of `.github/poc.yml` with the budget of the flags.
func (b *budgetFlags) bounds() (*repoconfig.RepoConfig, error) {
	cfg := repoconfig.Default()
	cfg.MaxClusters, cfg.AllowUnknownPrices = b.maxClusters, b.allowUnknown
	n, err := repoconfig.ParseEUR(b.maxDailyEUR)
	if err != nil {
		return nil, fmt.Errorf("--max-daily-eur: %w", err)
	}
	cfg.MaxDailyNanoEUR = n
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("the budget of bot up: %w", err)
	}
	return &cfg, nil
}

func upCommand() *command {
	var (
		name   string
		ttl    time.Duration
		dryRun bool
		sf     = specFlags{}
		lk     lockFlags
		budget budgetFlags
	)
	return &command{
		name:    "up",
		summary: "create or converge a cluster on Scaleway (as /poc up does)",
		env:     envWorld,
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			clusterFlag(fs, e, &name)
			e.Setting(&ttl, "ttl")
			e.Setting(&dryRun, "dry-run")
			sf.define(e)
			lk.define(e)
			budget.define(e)
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			if err := commands.ValidClusterName(name); err != nil || name == "" {
				return errors.Join(requireCluster(name), err)
			}
			if ttl <= 0 {
				return fmt.Errorf("--ttl %s: the expiry must be a positive duration", ttl)
			}
			given, err := sf.values(fs, a.getenv)
			if err != nil {
				return err
			}
			w, req, err := budget.open(ctx, a, &lk, name, "up", given)
			if err != nil {
				return err
			}
			defer w.Close()
			req.TTL = ttl
			if dryRun {
				return a.printPlan(ctx, w, req)
			}
			res, err := w.ops.Run(ctx, clusterops.VerbUp, req, newProgressPrinter(a.stderr))
			if err != nil {
				return fmt.Errorf("up %s: %w", name, err)
			}
			a.printUp(res)
			return nil
		},
	}
}

// intent is an operator's intent on a cluster: the seed's defaults with the image bucket. Run by
// a repository's workflow (workflow_dispatch, GITHUB_REPOSITORY), it is confined to that
// repository's clusters (Intent.Scope), since one state bucket serves every repository of the
// Scaleway project; a cluster it creates belongs to that repository.
func (a *app) intent(name, verb string, w *opsWorld, patch clusterops.SpecPatch) clusterops.Intent {
	spec := provision.DefaultSpec()
	spec.ImageBucket = w.bucketName
	actor := cmpOr(a.getenv("GITHUB_ACTOR"), a.getenv("USER"))
	actor = cmpOr(actor, "operator")
	repo := a.repoScope()
	return clusterops.Intent{Cluster: name, Spec: spec, Patch: patch, RequestedBy: actor,
		RunID: a.getenv("GITHUB_RUN_ID"), Command: verb, Repository: repo, Scope: repo, ShareParked: a.shareParked()}
}

// shareParked is share_parked_workers as the operator's environment sets it (POC_SHARE_PARKED_WORKERS;
// a value that does not parse shares nothing, the safe side, and says so).
func (a *app) shareParked() bool {
	b, err := a.env().Bool("share_parked_workers")
	if err != nil {
		a.log.Warn("parked workers are not shared", "err", err)
		return false
	}
	return b
}

func (a *app) printUp(res *clusterops.Outcome) {
	st := res.State
	a.printf("cluster %s is %s\n", res.Header.Cluster, res.Header.Phase)
	a.printf("  Kubernetes API: %s\n", st.Outputs[cluster.OutAPIEndpoint])
	_, talosAPI := clusterops.Endpoints(st)
	for _, ep := range talosAPI {
		a.printf("  Talos API:      %s\n", ep)
	}
	a.printf("  edge (worker):  %s\n", st.Outputs[cluster.OutWorkerIP])
	if res.KubeconfigLocation != "" {
		a.printf("  kubeconfig:     %s (encrypted; `bot kubeconfig --cluster %s -o kubeconfig`)\n", res.KubeconfigLocation, res.Header.Cluster)
	}
	if !res.Header.Expires.IsZero() {
		a.printf("  expires:        %s\n", res.Header.Expires.Format(time.RFC3339))
	}
	for _, c := range res.InPlace {
		a.printf("  changed in place: %s %v → %v\n", c.Field, c.Old, c.New)
	}
}
