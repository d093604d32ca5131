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

// specFlags are the overrides of the cluster's defaults (docs/seed.md, The cluster) an operator may pass to up; only flags given explicitly
// change an existing cluster.
type specFlags struct {
	zone, talos, dnsZone, cpType, offer, sshKeyFile string
	adminCIDRs, extensions                          []string
	cpCount                                         int
	exposeEdge                                      bool
	set                                             map[string]bool
}

func (s *specFlags) define(fs *flag.FlagSet, e *envFlags) {
	e.Setting(&s.zone, "zone")
	e.Setting(&s.talos, "talos")
	e.Setting(&s.adminCIDRs, "admin-cidr")
	e.Setting(&s.extensions, "extensions")
	e.Setting(&s.dnsZone, "dns-zone")
	e.Setting(&s.cpCount, "cp-count")
	e.Setting(&s.cpType, "cp-type")
	e.Setting(&s.offer, "worker-offer")
	e.Setting(&s.exposeEdge, "expose-edge")
	e.Setting(&s.sshKeyFile, "ssh-public-key-file")
}

// override returns what was set on the command line or by environment.
func (s *specFlags) override(fs *flag.FlagSet, getenv func(string) string) (func(*provision.Spec), error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"zone", "talos", "admin-cidr", "extensions", "dns-zone", "ssh-public-key-file"} {
		if st := settings.Lookup(name); getenv(st.Env) != "" {
			set[st.CLI] = true
		}
	}
	var personKey string
	if set["ssh-public-key-file"] && s.sshKeyFile != "" {
		b, err := os.ReadFile(s.sshKeyFile)
		if err != nil {
			return nil, fmt.Errorf("read --ssh-public-key-file: %w", err)
		}
		personKey = strings.TrimSpace(string(b))
	}
	v := *s
	// Each field of the spec a flag (or its variable) gives, in the order they apply.
	fields := []struct {
		flag string
		set  func(*provision.Spec)
	}{
		{"zone", func(sp *provision.Spec) {
			sp.Zone = v.zone
			if i := strings.LastIndex(v.zone, "-"); i > 0 {
				sp.Region = v.zone[:i]
			}
		}},
		{"talos", func(sp *provision.Spec) { sp.TalosVersion = v.talos }},
		{"admin-cidr", func(sp *provision.Spec) { sp.AdminCIDRs = v.adminCIDRs }},
		{"extension", func(sp *provision.Spec) { sp.TalosExtensions = v.extensions }},
		{"dns-zone", func(sp *provision.Spec) { sp.DNSZone = v.dnsZone }},
		{"cp-count", func(sp *provision.Spec) { sp.CPCount = v.cpCount }},
		{"cp-type", func(sp *provision.Spec) { sp.CPInstanceType = v.cpType }},
		{"worker-offer", func(sp *provision.Spec) { sp.BaremetalOffer = v.offer }},
		{"expose-edge", func(sp *provision.Spec) { sp.ExposeEdgeOnControlPlane = v.exposeEdge }},
	}
	return func(sp *provision.Spec) {
		for _, f := range fields {
			if set[f.flag] {
				f.set(sp)
			}
		}
		if personKey != "" {
			sp.SSHPublicKey = personKey
		}
	}, nil
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
func (b *budgetFlags) open(ctx context.Context, a *app, lk *lockFlags, name, verb string, override func(*provision.Spec)) (*opsWorld, clusterops.Intent, error) {
	bounds, err := b.bounds()
	if err != nil {
		return nil, clusterops.Intent{}, err
	}
	w, req, err := lk.open(ctx, a, name, verb, override)
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
		sf     specFlags
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
			sf.define(fs, e)
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
			override, err := sf.override(fs, a.getenv)
			if err != nil {
				return err
			}
			w, req, err := budget.open(ctx, a, &lk, name, "up", override)
			if err != nil {
				return err
			}
			defer w.Close()
			req.TTL = ttl
			if dryRun {
				return a.printPlan(ctx, w, req)
			}
			req.Progress = newProgressPrinter(a.stderr)
			res, err := w.ops.Up(ctx, req)
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
func (a *app) intent(name, verb string, w *opsWorld, override func(*provision.Spec)) clusterops.Intent {
	spec := provision.DefaultSpec()
	spec.ImageBucket = w.bucketName
	actor := cmpOr(a.getenv("GITHUB_ACTOR"), a.getenv("USER"))
	actor = cmpOr(actor, "operator")
	repo := a.repoScope()
	return clusterops.Intent{Cluster: name, Spec: spec, Override: override, RequestedBy: actor,
		RunID: a.getenv("GITHUB_RUN_ID"), Command: verb, Repository: repo, Scope: repo}
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
