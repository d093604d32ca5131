package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/statestore"
)

// probe settles one register row.
type probe struct {
	row string
	run func(ctx context.Context, cfg Config) Finding
}

// register is every row's probe, in the register's order (TestEveryRowHasAProbe).
func register() []probe {
	return []probe{
		{assume.QuotaRead, quotaRead},
		{assume.QuotaNames, quotaNames},
		{assume.DNSComment, dnsComment},
		{assume.EMStock, emStock},
		{assume.EMDelivery, emDelivery},
		{assume.EMPatchDelivering, observed(assume.EMPatchDelivering, "the first up that orders a worker (its one PATCH while delivering costs nothing; ordering to probe it would be billed an hour)")},
		{assume.TagLength, tagLength},
		{assume.IAMAppNames, iamAppNames},
		{assume.PutPrecondition, putPrecondition},
		{assume.DeleteConditions, deleteConditions},
		{assume.DeleteMarkers, deleteMarkers},
		{assume.PresignScope, presignScope},
		{assume.SchematicID, schematicID},
		{assume.NodeEgress, nodeEgress},
		{assume.TokenFormat, tokenFormat},
		{assume.VariableWriters, variableWriters},
		{assume.CompareBase, compareBase},
		{assume.UserDataCap, observed(assume.UserDataCap, "the first up (its control planes' user data; a server made to probe it would be billed)")},
		{assume.JobStart, observed(assume.JobStart, "the first comment's run")},
	}
}

// observed reports a row the bot's own runs settle (internal/firstcontact): the reading they met,
// or unknown until by says what does. It costs a read of the state bucket.
func observed(id, by string) func(ctx context.Context, cfg Config) Finding {
	return func(ctx context.Context, cfg Config) Finding {
		if cfg.FirstContact == nil {
			return Finding{Skipped: "no state bucket to read this project's runs from (POC_STATE_URL)"}
		}
		o, err := cfg.FirstContact.Read(ctx)
		if err != nil {
			return Finding{Err: err}
		}
		seen := o[id]
		if seen == nil {
			return Finding{Detail: "settled by " + by + ", which records what it meets"}
		}
		times := 0
		for _, n := range seen.Counts {
			times += n
		}
		detail := fmt.Sprintf("met %d time(s) by this project's runs, the last on %s: %s", times, seen.At.Format("2006-01-02 15:04 MST"), seen.Detail)
		if m := seen.Median(); m > 0 {
			detail = fmt.Sprintf("median %s over this project's last %d run(s); the last: %s", m.Round(time.Second), len(seen.Samples), seen.Detail)
		}
		return Finding{Reading: seen.Reading(assume.MustLookup(id)), Detail: detail}
	}
}

func listQuota(ctx context.Context, cfg Config) ([]*iam.Quotum, Finding, bool) {
	if cfg.Org == "" {
		return nil, Finding{Skipped: "SCW_DEFAULT_ORGANIZATION_ID is not set"}, false
	}
	res, err := iam.NewAPI(cfg.Scaleway).ListQuota(&iam.ListQuotaRequest{OrganizationID: cfg.Org}, scw.WithContext(ctx), scw.WithAllPages())
	var denied *scw.PermissionsDeniedError
	switch {
	case errors.As(err, &denied):
		return nil, Finding{Reading: "refused", Detail: "ListQuota answered permissions_denied to the bot's key"}, false
	case err != nil:
		return nil, Finding{Err: fmt.Errorf("list the organization's quotas: %w", err)}, false
	}
	return res.Quota, Finding{Reading: "allowed", Detail: fmt.Sprintf("the bot's key reads the organization's quotas (%d listed)", len(res.Quota))}, true
}

func quotaRead(ctx context.Context, cfg Config) Finding {
	_, f, _ := listQuota(ctx, cfg)
	return f
}

// quotaNames matches every quota a default cluster needs: all by name (snake), some by their
// pretty name only (pretty), some not at all (absent).
func quotaNames(ctx context.Context, cfg Config) Finding {
	qs, f, ok := listQuota(ctx, cfg)
	if !ok {
		if f.Err != nil {
			return f
		}
		return Finding{Skipped: "the quotas cannot be read (" + f.Detail + f.Skipped + "): quota-read settles it"}
	}
	listed := make([]preflight.Listed, 0, len(qs))
	for _, q := range qs {
		listed = append(listed, preflight.Listed{Name: q.Name, PrettyName: q.PrettyName})
	}
	keys := append([]string{cfg.Spec.CPInstanceType}, preflight.KeyIPs, preflight.KeyVolumes, preflight.KeySecurityGroups, preflight.KeySnapshots, preflight.KeySSHKeys)
	reading := "snake"
	var missing, pretty, found []string
	for _, k := range keys {
		l, _, byPretty, ok := preflight.Match(k, "", listed)
		switch {
		case !ok:
			missing = append(missing, k)
		case byPretty:
			pretty = append(pretty, k)
			found = append(found, k+"="+l.Name)
		default:
			found = append(found, k+"="+l.Name)
		}
	}
	switch {
	case len(missing) > 0:
		reading = "absent"
	case len(pretty) > 0:
		reading = "pretty"
	}
	detail := "found " + strings.Join(found, ", ")
	if len(missing) > 0 {
		detail += "; not found (weighed at the documented defaults): " + strings.Join(missing, ", ")
	}
	return Finding{Reading: reading, Detail: detail}
}

// dnsComment writes a TXT record carrying the probe's comment, reads the answer and the listing,
// and deletes it.
func dnsComment(ctx context.Context, cfg Config) Finding {
	if cfg.DNSZone == "" {
		return Finding{Skipped: "no DNS zone: give --dns-zone, or list dns_zones in .github/poc.yml"}
	}
	api := domain.NewAPI(cfg.Scaleway)
	name, comment := dnsProbePrefix+cfg.ID, provision.ClusterTag(ProbeCluster(cfg.ID))
	res, err := api.UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: cfg.DNSZone, DisallowNewZoneCreation: true,
		ReturnAllRecords: scw.BoolPtr(false), Changes: []*domain.RecordChange{{Add: &domain.RecordChangeAdd{Records: []*domain.Record{
			{Name: name, Type: domain.RecordTypeTXT, Data: `"pocbot doctor --live"`, TTL: 60, Comment: &comment}}}}}}, scw.WithContext(ctx))
	if err != nil {
		return Finding{Err: fmt.Errorf("add the TXT record %s in %s: %w", name, cfg.DNSZone, err)}
	}
	echoed := 0
	var ids []string
	for _, r := range res.Records {
		if r.Name == name {
			ids = append(ids, r.ID)
			if r.Comment != nil && *r.Comment == comment {
				echoed++
			}
		}
	}
	list, err := api.ListDNSZoneRecords(&domain.ListDNSZoneRecordsRequest{DNSZone: cfg.DNSZone, Name: name}, scw.WithContext(ctx), scw.WithAllPages())
	listed := 0
	if err == nil {
		for _, r := range list.Records {
			if r.Name == name && r.Comment != nil && *r.Comment == comment {
				listed++
			}
		}
	}
	cctx, cancel := cfg.cleanupContext(ctx)
	defer cancel()
	if derr := deleteRecords(cctx, cfg, ids); derr != nil {
		return Finding{Err: derr}
	}
	if err != nil {
		return Finding{Err: fmt.Errorf("list the records of %s: %w", cfg.DNSZone, err)}
	}
	if echoed > 0 && listed > 0 {
		return Finding{Reading: "echoed", Detail: "the PATCH answer and the listing carry the comment written"}
	}
	return Finding{Reading: "dropped", Detail: fmt.Sprintf("the comment written came back %d time(s) in the answer, %d in the listing", echoed, listed)}
}

func deleteRecords(ctx context.Context, cfg Config, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var changes []*domain.RecordChange
	for _, id := range ids {
		changes = append(changes, &domain.RecordChange{Delete: &domain.RecordChangeDelete{ID: scw.StringPtr(id)}})
	}
	_, err := domain.NewAPI(cfg.Scaleway).UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: cfg.DNSZone, Changes: changes,
		DisallowNewZoneCreation: true, ReturnAllRecords: scw.BoolPtr(false)}, scw.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("delete the probe's DNS records %v: %w", ids, err)
	}
	return nil
}

// emStock is the stock of the first worker offer (the one the pre-flight tries first); the
// others are in the detail.
func emStock(ctx context.Context, cfg Config) Finding {
	res, err := baremetal.NewAPI(cfg.Scaleway).ListOffers(&baremetal.ListOffersRequest{Zone: cfg.Zone, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly},
		scw.WithContext(ctx), scw.WithAllPages())
	if err != nil {
		return Finding{Err: fmt.Errorf("list the Elastic Metal offers of %s: %w", cfg.Zone, err)}
	}
	var f Finding
	var seen []string
	for i, name := range cfg.Offers {
		stock := "not offered hourly here"
		for _, o := range res.Offers {
			if o.Name == name {
				stock = string(o.Stock)
			}
		}
		if i == 0 {
			f.Reading = stock
			if _, ok := assume.MustLookup(assume.EMStock).Reading(stock); !ok {
				f.Reading, f.Err = "", fmt.Errorf("offer %s is not offered hourly in %s: check worker_offers and the zone", name, cfg.Zone)
			}
		}
		seen = append(seen, name+" "+stock)
	}
	f.Detail = "in " + string(cfg.Zone) + ": " + strings.Join(seen, ", ")
	return f
}

// emDelivery reads what this project's orders taught the ETA: fast (≤ 1 min), recorded (≤ 15
// min), slow.
func emDelivery(ctx context.Context, cfg Config) Finding {
	if cfg.ETA == nil || len(cfg.Offers) == 0 {
		return Finding{Skipped: "no state bucket to read this project's ups from"}
	}
	offer := cfg.Offers[0]
	d, n, err := cfg.ETA.LearnedDelivery(ctx, offer)
	if err != nil {
		return Finding{Err: err}
	}
	if n == 0 {
		return Finding{Skipped: "no up of this project ordered " + offer + " yet: the ETA uses the recorded 287 s until one does (nothing is ordered to probe it)"}
	}
	reading := "recorded"
	switch {
	case d <= time.Minute:
		reading = "fast"
	case d > 15*time.Minute:
		reading = "slow"
	}
	return Finding{Reading: reading, Detail: fmt.Sprintf("%s delivered in %s (median of %d order(s) of this project)", offer, d.Round(time.Second), n)}
}

// tagLength reserves a flexible IP tagged as the probe's with a 70-character tag, adds a
// 71-character one, and deletes it.
func tagLength(ctx context.Context, cfg Config) Finding {
	api := instance.NewAPI(cfg.Scaleway)
	tags := probeTags(cfg.ID)
	long := func(n int) string { return "pocbot-probe-len=" + strings.Repeat("x", n-len("pocbot-probe-len=")) }
	res, err := api.CreateIP(&instance.CreateIPRequest{Zone: cfg.Zone, Project: &cfg.Project, Type: instance.IPTypeRoutedIPv4,
		Tags: append(tags, long(provision.MaxTagLen))}, scw.WithContext(ctx))
	var invalid *scw.InvalidArgumentsError
	if errors.As(err, &invalid) {
		return Finding{Reading: "shorter", Detail: "a flexible IP with a 70-character tag was refused: " + err.Error()}
	}
	if err != nil {
		return Finding{Err: fmt.Errorf("reserve a flexible IP: %w", err), Cost: 0}
	}
	f := Finding{Cost: assume.MustLookup(assume.TagLength).Cost}
	defer func() {
		cctx, cancel := cfg.cleanupContext(ctx)
		defer cancel()
		if derr := api.DeleteIP(&instance.DeleteIPRequest{Zone: cfg.Zone, IP: res.IP.ID}, scw.WithContext(cctx)); derr != nil && f.Err == nil {
			f.Err = fmt.Errorf("delete the probe's flexible IP %s: %w (rerun: the next run deletes it)", res.IP.ID, derr)
		}
	}()
	more := append(append(tags, long(provision.MaxTagLen)), long(provision.MaxTagLen+1))
	_, err = api.UpdateIP(&instance.UpdateIPRequest{Zone: cfg.Zone, IP: res.IP.ID, Tags: &more}, scw.WithContext(ctx))
	switch {
	case errors.As(err, &invalid):
		f.Reading, f.Detail = "70", "70 characters accepted, 71 refused"
	case err != nil:
		f.Err = fmt.Errorf("retag the probe's flexible IP: %w", err)
	default:
		f.Reading, f.Detail = "longer", "71 characters accepted too"
	}
	return f
}

// probeTags are the tags of a probe's Scaleway resources: the bot's and a cluster no state names.
func probeTags(id string) []string {
	return []string{provision.TagBot, provision.ClusterTag(ProbeCluster(id)), provision.ResTag("probe-ip")}
}

func writeProbe(ctx context.Context, cfg Config) (statestore.WriteProbe, Finding, bool) {
	if cfg.Store == nil {
		return statestore.WriteProbe{}, Finding{Skipped: "no state bucket (POC_STATE_URL)"}, false
	}
	p, err := cfg.Store.ProbeWrites(ctx, "writes-"+cfg.ID)
	switch {
	case errors.Is(err, statestore.ErrNotS3):
		return p, Finding{Skipped: "the state is not in an S3 bucket"}, false
	case err != nil:
		return p, Finding{Err: err}, false
	}
	return p, Finding{}, true
}

func putPrecondition(ctx context.Context, cfg Config) Finding {
	p, f, ok := writeProbe(ctx, cfg)
	if !ok {
		return f
	}
	switch p.LostPut {
	case http.StatusPreconditionFailed:
		return Finding{Reading: "412", Detail: "a create over an existing object with If-None-Match: * answered 412"}
	case http.StatusConflict:
		return Finding{Reading: "409", Detail: "a create over an existing object with If-None-Match: * answered 409"}
	case http.StatusOK:
		return Finding{Reading: "ignored", Detail: "a create over an existing object with If-None-Match: * was written"}
	}
	return Finding{Err: fmt.Errorf("a create over an existing object with If-None-Match: * answered %d", p.LostPut)}
}

func deleteConditions(ctx context.Context, cfg Config) Finding {
	p, f, ok := writeProbe(ctx, cfg)
	if !ok {
		return f
	}
	switch {
	case p.CondDelete == http.StatusNotImplemented:
		return Finding{Reading: "rejected", Detail: "a DeleteObject with a failing If-Match answered 501"}
	case p.CondDelete == http.StatusPreconditionFailed:
		return Finding{Reading: "honoured", Detail: "a DeleteObject with a failing If-Match answered 412"}
	case p.CondDelete/100 == 2 && p.Deleted:
		return Finding{Reading: "ignored", Detail: fmt.Sprintf("a DeleteObject with a failing If-Match answered %d and deleted the object", p.CondDelete)}
	}
	return Finding{Err: fmt.Errorf("a DeleteObject with a failing If-Match answered %d (object deleted: %v)", p.CondDelete, p.Deleted)}
}

// deleteMarkers: a delete marker older than the lifecycle bound and a day means the bucket keeps
// them. None tells nothing within a run (a marker must outlive the bound to tell expired from
// kept), and every reading is handled: the detail says what the rule holds.
func deleteMarkers(ctx context.Context, cfg Config) Finding {
	if cfg.Store == nil {
		return Finding{Skipped: "no state bucket (POC_STATE_URL)"}
	}
	versioned, err := cfg.Store.Versioned(ctx)
	switch {
	case errors.Is(err, statestore.ErrNotS3):
		return Finding{Skipped: "the state is not in an S3 bucket"}
	case err != nil:
		return Finding{Err: err}
	case !versioned:
		return Finding{Skipped: "the state bucket is not versioned: a delete leaves no marker"}
	}
	rule := "the lifecycle rule expires delete markers"
	switch err := cfg.Store.CheckVersionRetention(ctx); {
	case errors.Is(err, statestore.ErrMarkersKept):
		rule = "the lifecycle rule has no ExpiredObjectDeleteMarker (the bucket refused it, or an older init wrote the rule)"
	case errors.Is(err, statestore.ErrNoVersionExpiry):
		return Finding{Err: fmt.Errorf("%w (bot init writes the rule)", err)}
	case err != nil:
		return Finding{Err: err}
	}
	bound := time.Duration(statestore.NoncurrentDays+1) * 24 * time.Hour
	total, older, err := cfg.Store.DeleteMarkers(ctx, time.Now().Add(-bound))
	if err != nil {
		return Finding{Err: err}
	}
	if older > 0 {
		return Finding{Reading: "kept", Detail: fmt.Sprintf("%s; %d of %d delete markers are older than %d days", rule, older, total, statestore.NoncurrentDays+1)}
	}
	return Finding{Detail: fmt.Sprintf("%s; %d delete markers, none older than %d days (one must outlive the bound to tell expired from kept)", rule, total, statestore.NoncurrentDays+1)}
}

func presignScope(ctx context.Context, cfg Config) Finding {
	if cfg.Store == nil {
		return Finding{Skipped: "no state bucket (POC_STATE_URL)"}
	}
	pub, priv, err := cfg.Store.ProbePresign(ctx, "presign-"+cfg.ID)
	switch {
	case errors.Is(err, statestore.ErrNotS3):
		return Finding{Skipped: "the state is not in an S3 bucket"}
	case errors.Is(err, statestore.ErrNoPresigner):
		return Finding{Skipped: "no presigning key (POC_PRESIGN_ACCESS_KEY): links are signed with the bot's own key"}
	case err != nil:
		return Finding{Err: err}
	}
	detail := fmt.Sprintf("a link to public/ answered %d, one outside it %d", pub, priv)
	switch {
	case pub != http.StatusOK:
		return Finding{Reading: "refused", Detail: detail}
	case priv == http.StatusOK:
		return Finding{Reading: "wide", Detail: detail}
	}
	return Finding{Reading: "narrowed", Detail: detail}
}

// schematicID posts the default cluster's schematic and compares the factory's id with the bot's.
func schematicID(ctx context.Context, cfg Config) Finding {
	doc, want := images.Schematic(cfg.Spec.TalosExtensions)
	u := strings.TrimRight(cfg.FactoryURL, "/") + "/schematics"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(doc))
	if err != nil {
		return Finding{Err: err}
	}
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := cfg.HTTP.Do(req)
	if err != nil {
		return Finding{Err: fmt.Errorf("post a schematic to %s: %w", u, err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out struct {
		ID string `json:"id"`
	}
	if resp.StatusCode/100 != 2 || json.Unmarshal(body, &out) != nil {
		return Finding{Err: fmt.Errorf("post a schematic to %s: HTTP %d: %s", u, resp.StatusCode, strings.TrimSpace(string(body)))}
	}
	if out.ID != want {
		return Finding{Reading: "different", Detail: fmt.Sprintf("the factory named it %s, the bot %s", out.ID, want)}
	}
	return Finding{Reading: "same", Detail: "the factory named the default schematic " + want[:12] + "…, as the bot does"}
}

// nodeEgress reaches every registry's /v2/ (200 or 401: a registry answering, OCI distribution
// spec's API version check).
func nodeEgress(ctx context.Context, cfg Config) Finding {
	var ok, ko []string
	for _, base := range cfg.Registries {
		u := strings.TrimRight(base, "/") + "/v2/"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return Finding{Err: err}
		}
		resp, err := cfg.HTTP.Do(req)
		if err != nil {
			ko = append(ko, base+" ("+err.Error()+")")
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
			ok = append(ok, base)
		} else {
			ko = append(ko, fmt.Sprintf("%s (HTTP %d)", base, resp.StatusCode))
		}
	}
	if len(ko) > 0 {
		return Finding{Reading: "blocked", Detail: "not reached from here: " + strings.Join(ko, ", ")}
	}
	return Finding{Reading: "open", Detail: "reached from here (the nodes' own path shows in an up's readiness checks): " + strings.Join(ok, ", ")}
}

// tokenFormat mints an installation token and reads its form; it is kept nowhere and expires
// within the hour.
func tokenFormat(ctx context.Context, cfg Config) Finding {
	if cfg.GitHubToken == nil {
		return Finding{Skipped: "no App credentials or repository (POC_APP_ID, POC_APP_PRIVATE_KEY, --repo)"}
	}
	tok, err := cfg.GitHubToken(ctx)
	if err != nil {
		return Finding{Err: fmt.Errorf("mint an installation token: %w", err)}
	}
	switch {
	case strings.HasPrefix(tok, "ghs_") && strings.Count(tok, "_") >= 2 && strings.Count(tok, ".") == 2:
		return Finding{Reading: "stateless", Detail: fmt.Sprintf("ghs_<app id>_<JWT>, %d characters", len(tok))}
	case strings.HasPrefix(tok, "ghs_"):
		return Finding{Reading: "classic", Detail: fmt.Sprintf("ghs_ and %d characters", len(tok)-4)}
	}
	return Finding{Err: fmt.Errorf("an installation token of an unknown form (%d characters, prefix %.4s)", len(tok), tok)}
}

// iamAppNames lists the organization's applications of pocbot's names for the project: one name
// held twice settles duplicates. Fewer settle nothing (whether a second would be refused is not
// asked: the bot's key may not write IAM, and the doctor makes no identity).
func iamAppNames(ctx context.Context, cfg Config) Finding {
	if cfg.Org == "" || cfg.Project == "" {
		return Finding{Skipped: "SCW_DEFAULT_ORGANIZATION_ID or SCW_DEFAULT_PROJECT_ID is not set"}
	}
	api := iam.NewAPI(cfg.Scaleway)
	var seen []string
	twice := ""
	for _, name := range repoinit.ApplicationNames(cfg.Project) {
		res, err := api.ListApplications(&iam.ListApplicationsRequest{Name: &name, OrganizationID: cfg.Org}, scw.WithContext(ctx), scw.WithAllPages())
		var denied *scw.PermissionsDeniedError
		switch {
		case errors.As(err, &denied):
			return Finding{Skipped: "the bot's key may not list IAM applications (IAMReadOnly); both readings are handled"}
		case err != nil:
			return Finding{Err: fmt.Errorf("list the IAM applications named %s: %w", name, err)}
		}
		n := 0
		for _, a := range res.Applications {
			if a.Name == name { // the name filter is partial
				n++
			}
		}
		if n > 1 && twice == "" {
			twice = name
		}
		seen = append(seen, fmt.Sprintf("%s ×%d", name, n))
	}
	if twice != "" {
		return Finding{Reading: "duplicates", Detail: "the organization holds " + strings.Join(seen, ", ")}
	}
	return Finding{Detail: "the organization holds " + strings.Join(seen, ", ") + ": no name twice, which settles nothing"}
}

// repoClient is a client of cfg's repository with an installation token of the App, on cfg.HTTP's
// transport (a recording wraps it).
func repoClient(ctx context.Context, cfg Config) (c *gh.Client, owner, name string, f Finding, ok bool) {
	if cfg.GitHubToken == nil || cfg.GitHubRepo == "" {
		return nil, "", "", Finding{Skipped: "no App credentials or repository (POC_APP_ID, POC_APP_PRIVATE_KEY, --repo)"}, false
	}
	tok, err := cfg.GitHubToken(ctx)
	if err != nil {
		return nil, "", "", Finding{Err: fmt.Errorf("mint an installation token: %w", err)}, false
	}
	owner, name, _ = strings.Cut(cfg.GitHubRepo, "/")
	opts := []gh.ClientOptionsFunc{gh.WithAuthToken(tok), gh.WithHTTPClient(cfg.HTTP)}
	if cfg.GitHubAPIURL != "" {
		u := strings.TrimRight(cfg.GitHubAPIURL, "/") + "/"
		opts = append(opts, gh.WithURLs(&u, nil))
	}
	if c, err = gh.NewClient(opts...); err != nil {
		return nil, "", "", Finding{Err: err}, false
	}
	return c, owner, name, Finding{}, true
}

// compareTries bounds the older commits compareBase tries (two reads each).
const compareTries = 3

// compareBase tells the readings apart with reads of the default branch's own history: for an
// older commit whose tree differs from head's (older...head lists files under both readings: the
// merge base of the two is older), head...older has older itself as its merge base, so it lists
// no file under merge-base and head's changes, reversed, under base-tip.
func compareBase(ctx context.Context, cfg Config) Finding {
	c, owner, name, f, ok := repoClient(ctx, cfg)
	if !ok {
		return f
	}
	repo, _, err := c.Repositories.Get(ctx, owner, name)
	if err != nil {
		return Finding{Err: fmt.Errorf("read %s: %w", cfg.GitHubRepo, err)}
	}
	branch := repo.GetDefaultBranch()
	commits, _, err := c.Repositories.ListCommits(ctx, owner, name, &gh.CommitsListOptions{SHA: branch, ListOptions: gh.ListOptions{PerPage: 30}})
	if err != nil {
		return Finding{Err: fmt.Errorf("list the commits of %s: %w", branch, err)}
	}
	if len(commits) < 2 {
		return Finding{Detail: fmt.Sprintf("%s has one commit, and a comparison needs two that differ", branch)}
	}
	head := commits[0].GetSHA()
	for i := len(commits) - 1; i >= max(1, len(commits)-compareTries); i-- {
		older := commits[i].GetSHA()
		fwd, _, err := c.Repositories.CompareCommits(ctx, owner, name, older, head, &gh.ListOptions{PerPage: 100})
		if err != nil {
			return Finding{Err: fmt.Errorf("compare %s...%s of %s: %w", short(older), short(head), branch, err)}
		}
		if len(fwd.Files) == 0 {
			continue // the same tree: this pair tells nothing
		}
		back, _, err := c.Repositories.CompareCommits(ctx, owner, name, head, older, &gh.ListOptions{PerPage: 100})
		if err != nil {
			return Finding{Err: fmt.Errorf("compare %s...%s of %s: %w", short(head), short(older), branch, err)}
		}
		seen := fmt.Sprintf("%s...%s (head behind base by %d, merge base %s) lists %d file(s); %s...%s lists %d",
			short(head), short(older), back.GetBehindBy(), short(back.GetMergeBaseCommit().GetSHA()), len(back.Files), short(older), short(head), len(fwd.Files))
		if len(back.Files) == 0 {
			return Finding{Reading: "merge-base", Detail: seen}
		}
		return Finding{Reading: "base-tip", Detail: seen}
	}
	return Finding{Detail: fmt.Sprintf("the last %d commits of %s have the same tree as its head", len(commits), branch)}
}

func short(sha string) string { return sha[:min(len(sha), 7)] }

// variableWriters is what a read with the bot's token can tell of register row
// variable-writers: not GitHub's rule (telling writers from admins needs a write with the token
// of a collaborator with write who is not an administrator), but whom it concerns here. With no
// such collaborator both readings let the same people write; otherwise it names who the writers
// reading lets write. Both readings are handled: init's record is verified, not trusted.
func variableWriters(ctx context.Context, cfg Config) Finding {
	c, owner, name, f, ok := repoClient(ctx, cfg)
	if !ok {
		return f
	}
	users, resp, err := c.Repositories.ListCollaborators(ctx, owner, name, &gh.ListCollaboratorsOptions{Affiliation: "all", ListOptions: gh.ListOptions{PerPage: 100}})
	if resp != nil && resp.StatusCode == http.StatusForbidden {
		return Finding{Skipped: "the App may not list the repository's collaborators; both readings are handled"}
	}
	if err != nil {
		return Finding{Err: fmt.Errorf("list the collaborators of %s: %w", cfg.GitHubRepo, err)}
	}
	var admins, writers []string
	for _, u := range users {
		p := u.GetPermissions()
		switch {
		case p.GetAdmin():
			admins = append(admins, u.GetLogin())
		case p.GetPush() || p.GetMaintain():
			writers = append(writers, u.GetLogin()+" ("+u.GetRoleName()+")")
		}
	}
	if len(writers) == 0 {
		return Finding{Detail: fmt.Sprintf("the same here under either reading: every collaborator who may push is an administrator (%d)", len(admins))}
	}
	return Finding{Detail: fmt.Sprintf("a read cannot tell; under writers, %d collaborator(s) who are not administrators may write repository variables: %s (init's record is verified, not trusted)",
		len(writers), strings.Join(writers, ", "))}
}
