package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/doctor"
	"github.com/pocbot/pocbot/internal/doctor/live"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/record"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/wiring"
)

func doctorCommand() *command {
	var (
		gf                      githubFlags
		key, dnsZone, recordDir string
		liveProbes              bool
	)
	return &command{
		name: "doctor",
		summary: "check a live installation and print a checklist with what to fix for each item: App, secrets, workflow pin, " +
			"Scaleway credentials and IAM permissions, the state bucket's conditional writes, the pinned Cilium chart (fetched and rendered); " +
			"with --live, settle the assumptions register's rows on the real account (docs/assumptions.md); exits non-zero on a failure",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			gf.define(e, "GITHUB_REPOSITORY", "OWNER/REPO of the installation (its App, secrets and workflow; empty: only the Scaleway and state checks)")
			e.String(&key, "key", "", "", "the bot's Scaleway access key whose IAM permissions to check (default: SCW_ACCESS_KEY)")
			e.Bool(&liveProbes, "live", "", false, "also run the assumptions register's probes on the account, with the bot's key: cheap, reversible calls "+
				"(at most € 0.05, 3 minutes), everything they make removed before exit (docs/assumptions.md)")
			e.SettingWith(&dnsZone, "dns-zone", nil, "with --live: the DNS zone whose record probe settles dns-comment (a TXT record made and removed)")
			e.Setting(&recordDir, record.Setting)
		},
		env: append(append([]string{"POC_APP_ID", "POC_APP_PRIVATE_KEY", "POC_APP_PRIVATE_KEY_FILE", "POC_CILIUM_CHART"}, envStore...), envSCW...),
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			// With --record, every check's and probe's exchange is recorded: a real account's
			// first contact comes back as cassettes `make fidelity` replays (docs/recording.md).
			a.recordInto(recordDir)
			checks := a.doctorChecks(ctx, gf, key)
			list := doctor.Run(ctx, checks...)
			list.Render(a.stdout)
			failed := list.Failed()
			if liveProbes {
				fmt.Fprintln(a.stdout)
				rep, err := a.doctorLive(ctx, gf, dnsZone)
				if err != nil {
					return fmt.Errorf("doctor --live: %w", err)
				}
				rep.Render(a.stdout)
				failed = append(failed, rep.Failed()...)
			}
			if len(failed) > 0 {
				return fmt.Errorf("doctor: %d checks failed (%s): see the → lines above", len(failed), strings.Join(failed, ", "))
			}
			return nil
		},
	}
}

// doctorLive runs the assumptions register's probes with the parts wiring.Live opens from the
// environment (the bot's key: SCW_*), the repository's App for the token probe, dnsZone for the
// record probe.
func (a *app) doctorLive(ctx context.Context, gf githubFlags, dnsZone string) (live.Report, error) {
	cfg, closeAll, err := wiring.Live(ctx, a.getenv, a.log)
	defer closeAll()
	if err != nil {
		return live.Report{}, err
	}
	cfg.DNSZone = strings.TrimSpace(dnsZone)
	if auth, err := a.appAuth(); err == nil && auth.AppID != 0 && gf.repo != "" {
		auth.Owner, auth.Repo, _ = strings.Cut(gf.repo, "/")
		auth.BaseURL = gf.apiURL
		cfg.GitHubRepo, cfg.GitHubAPIURL = gf.repo, gf.apiURL
		cfg.GitHubToken = func(ctx context.Context) (string, error) {
			c, err := github.NewClient(ctx, auth)
			if err != nil {
				return "", err
			}
			return c.Token(ctx)
		}
	}
	return live.Run(ctx, cfg), nil
}

// doctorChecks composes the checklist from the environment.
func (a *app) doctorChecks(ctx context.Context, gf githubFlags, key string) []doctor.Check {
	var checks []doctor.Check
	if gf.repo != "" {
		g := doctor.GitHub{Repo: gf.repo, Env: gf.env, APIURL: gf.apiURL}
		if tok, _, err := repoinit.GitHubToken(ctx, a.getenv, nil); err == nil {
			g.Token = tok
		}
		if auth, err := a.appAuth(); err == nil {
			g.AppID, g.AppKey = auth.AppID, auth.PrivateKeyPEM
		}
		checks = append(checks, g.Checks()...)
	}
	if key == "" {
		key = a.env().String("scw-access-key")
	}
	client, err := wiring.ScalewayClient(a.getenv)
	if err != nil {
		client = nil
	}
	if client != nil {
		checks = append(checks, doctor.Credentials(client, a.env().String("scw-project")))
	}
	checks = append(checks, doctor.IAM(client, key, a.env().String("scw-project")))
	checks = append(checks, func(ctx context.Context) []doctor.Item { return a.stateCheck(ctx, true) })
	if src, err := wiring.CiliumChart(a.getenv); err != nil {
		checks = append(checks, func(context.Context) []doctor.Item {
			return []doctor.Item{{Name: doctor.CiliumChartName, Status: doctor.Fail, Detail: err.Error(), Fix: "set POC_CILIUM_CHART to URL@sha256:DIGEST, or unset it for the default pin"}}
		})
	} else {
		checks = append(checks, doctor.CiliumChart(src, http.DefaultClient))
	}
	if client != nil {
		checks = append(checks, func(ctx context.Context) []doctor.Item { return a.headroomCheck(ctx, gf.repo) })
	}
	return checks
}

// headroomCheck runs the pre-flight of one default cluster (what `/poc up` with no options
// orders: the organization's quotas, the project's usage, the worker offers' stock); nothing is
// created. With a repository, its warm pool is weighed too (doctor.PoolFit).
func (a *app) headroomCheck(ctx context.Context, repo string) []doctor.Item {
	w, err := a.openWorld(ctx)
	if err != nil {
		return []doctor.Item{{Name: doctor.HeadroomName, Status: doctor.Skip, Detail: "cannot open the bot's world: " + err.Error(),
			Fix: "fix the items above (credentials, state store, POC_IMAGE_BUCKET), then rerun"}}
	}
	defer w.Close()
	req := a.intent(doctorProbeCluster, "up", w, nil)
	req.DryRun = true // the dry up's decisions and pre-flight: nothing is locked, written or created
	res, err := w.ops.Up(ctx, req)
	switch {
	case err != nil && res.Preflight == nil:
		return []doctor.Item{{Name: doctor.HeadroomName, Status: doctor.Fail, Detail: "plan one default cluster, read the quotas, usage and stock: " + err.Error(),
			Fix: "check .github/poc.yml's defaults; the key needs read access to IAM quotas and the Instance and Elastic Metal APIs (its permission sets above)"}}
	}
	items := doctor.Headroom(res.Preflight)
	if repo == "" {
		return items
	}
	return append(items, a.poolFitItem(ctx, w, repo, res.Preflight)...)
}

// poolFitItem weighs repo's pool.size against the quotas (pf: one default cluster's pre-flight),
// its running spares counted.
func (a *app) poolFitItem(ctx context.Context, w *opsWorld, repo string, pf *preflight.Result) []doctor.Item {
	rc, from, err := a.poolBounds(ctx, repo)
	if err != nil {
		return []doctor.Item{{Name: doctor.PoolFitName, Status: doctor.Fail, Detail: err.Error(), Fix: "fix " + repoconfig.Path + " (`bot doctor` above says what GitHub refused)"}}
	}
	pc, err := w.ops.CostOfPool(ctx, repo)
	if err != nil {
		return []doctor.Item{{Name: doctor.PoolFitName, Status: doctor.Fail, Detail: "count the running spares: " + err.Error(), Fix: "check the state store (above)"}}
	}
	return doctor.PoolFit(pf, rc.Pool.Size, pc.Spares, from)
}

// doctorProbeCluster is the name the headroom check plans under (never created).
const doctorProbeCluster = "doctor-probe"

// stateCheck checks the state bucket: reachable and conditional writes (CheckBackend); with full,
// also the retention of old versions and a presigned link.
func (a *app) stateCheck(ctx context.Context, full bool) []doctor.Item {
	if !a.env().Given("state-url") {
		return []doctor.Item{{Name: "state store", Status: doctor.Skip, Detail: "POC_STATE_URL is not set", Fix: "set POC_STATE_URL and POC_STATE_KEY as the workflow has them"}}
	}
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	store, err := openStore(ctx, a.getenv, a, &closers)
	if err != nil {
		return []doctor.Item{{Name: "state store", Status: doctor.Fail, Detail: err.Error(), Fix: "check POC_STATE_URL (s3://BUCKET?endpoint=…&region=…), POC_STATE_KEY and the bucket's credentials"}}
	}
	closers = append(closers, func() { _ = store.Close() })
	if err := store.CheckBackend(ctx); err != nil {
		fix := "check the bucket's credentials and endpoint"
		if errors.Is(err, statestore.ErrUnsafeBackend) {
			fix = "this bucket does not honour conditional writes (If-None-Match, If-Match): two runs could overwrite each other's state; use Scaleway Object Storage (or another S3 with conditional writes) for POC_STATE_URL"
		}
		return []doctor.Item{{Name: "state store", Status: doctor.Fail, Detail: err.Error(), Fix: fix}}
	}
	items := []doctor.Item{{Name: "state store", Status: doctor.OK, Detail: store.Location() + ": reachable, conditional writes honoured"}}
	if !full {
		return items
	}
	switch err := store.CheckVersionRetention(ctx); {
	case err == nil:
		items = append(items, doctor.Item{Name: "versioning, lifecycle", Status: doctor.OK, Detail: "old versions do not pile up (versioning off, or a rule expires noncurrent versions and delete markers)"})
	case errors.Is(err, statestore.ErrMarkersKept):
		items = append(items, doctor.Item{Name: "versioning, lifecycle", Status: doctor.Warn, Detail: err.Error(),
			Fix: "rerun `bot init` (it adds ExpiredObjectDeleteMarker to its rule when the bucket accepts it); pocbot's own deletes leave no marker either way"})
	case errors.Is(err, statestore.ErrNoVersionExpiry):
		items = append(items, doctor.Item{Name: "versioning, lifecycle", Status: doctor.Fail, Detail: err.Error(),
			Fix: "add a lifecycle rule expiring noncurrent versions: aws s3api put-bucket-lifecycle-configuration --bucket BUCKET --endpoint-url https://s3.fr-par.scw.cloud --lifecycle-configuration '" + statestore.LifecycleRuleExample + "'"})
	default:
		items = append(items, doctor.Item{Name: "versioning, lifecycle", Status: doctor.Warn, Detail: err.Error(), Fix: "give the key s3:GetBucketVersioning and s3:GetLifecycleConfiguration, or check in the console"})
	}
	if strings.HasPrefix(a.env().String("state-url"), "s3://") {
		key := "doctor/probe-" + fmt.Sprint(a.clock().UnixNano())
		if err := store.PutPublic(ctx, key, []byte("pocbot doctor\n")); err != nil {
			items = append(items, doctor.Item{Name: "presigned link", Status: doctor.Fail, Detail: err.Error(), Fix: "the bot's key must write public/ in the state bucket"})
		} else {
			_, err := store.SignedURL(ctx, key, time.Minute)
			_ = store.DeletePublic(context.WithoutCancel(ctx), "doctor/")
			if err != nil {
				items = append(items, doctor.Item{Name: "presigned link", Status: doctor.Fail, Detail: err.Error(), Fix: "the presigning key (POC_PRESIGN_*) needs read on the bucket and a bucket policy allowing public/ (docs/install.md)"})
			} else {
				items = append(items, doctor.Item{Name: "presigned link", Status: doctor.OK, Detail: "a signed link to public/ answers"})
			}
		}
	} else {
		items = append(items, doctor.Item{Name: "presigned link", Status: doctor.Skip, Detail: "file:// state has no signed links", Fix: "use an s3:// POC_STATE_URL"})
	}
	return items // quota and stock: headroomCheck
}

// setupDiagnosis is the fast part of `bot doctor`, run when a command could not open its backend:
// the settings the workflow gives, the Scaleway key, the state bucket. Its failed items, each with
// what to fix, are added to the error, which the reply shows.
func (a *app) setupDiagnosis(ctx context.Context, getenv func(string) string, cause error) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var items []doctor.Item
	for _, k := range []string{"POC_STATE_URL", "POC_STATE_KEY", "POC_IMAGE_BUCKET", "SCW_ACCESS_KEY", "SCW_SECRET_KEY", "SCW_DEFAULT_PROJECT_ID"} {
		if strings.TrimSpace(getenv(k)) == "" {
			items = append(items, doctor.Item{Name: "secrets", Status: doctor.Fail, Detail: k + " is empty in this run",
				Fix: "the workflow passes it from a secret: rerun `bot init --repo " + getenv("GITHUB_REPOSITORY") + "` (it writes what is missing), or set the secret"})
		}
	}
	if len(items) == 0 {
		if client, err := wiring.ScalewayClient(getenv); err == nil {
			items = append(items, doctor.Credentials(client, settings.Env(getenv).String("scw-project"))(ctx)...)
		}
		b := *a
		b.getenv = getenv
		items = append(items, b.stateCheck(ctx, false)...)
	}
	var failed strings.Builder
	for _, it := range items {
		if it.Status == doctor.Fail {
			fmt.Fprintf(&failed, "✗ %s: %s\n    → %s\n", it.Name, it.Detail, it.Fix)
		}
	}
	if failed.Len() == 0 {
		return cause
	}
	return fmt.Errorf("%w\n\nset-up checks (the fast part of bot doctor):\n%s", cause, failed.String())
}
