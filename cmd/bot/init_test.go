package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// workflowEnv is what a run of the merged workflow gives `bot handle`: the pocbot step's with:
// values (secrets resolved as GitHub does, from the environment the job names or the repository),
// mapped to variables by action.yml's run step.
func workflowEnv(t *testing.T, gh *ghsim.Server, repo string) map[string]string {
	t.Helper()
	wfText, ok := gh.File(repo, "", repoinit.WorkflowPath)
	if !ok {
		t.Fatalf("%s is not on the default branch", repoinit.WorkflowPath)
	}
	var wf struct {
		Jobs map[string]struct {
			Environment string `yaml:"environment"`
			Steps       []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(wfText, &wf); err != nil {
		t.Fatal(err)
	}
	actionText, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Runs struct {
			Steps []struct {
				ID  string            `yaml:"id"`
				Env map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(actionText, &action); err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`^\$\{\{\s*(secrets|vars|inputs)\.([A-Za-z0-9_-]+)(?:\s*\|\|\s*'([^']*)')?\s*\}\}$`)
	job := wf.Jobs["bot"]
	inputs := map[string]string{}
	for _, st := range job.Steps {
		if !strings.HasPrefix(st.Uses, "pocbot/pocbot@") {
			continue
		}
		for k, v := range st.With {
			m := ref.FindStringSubmatch(v)
			switch {
			case m == nil:
				inputs[k] = v
			case m[1] == "secrets":
				s, ok := gh.Secret(repo, job.Environment, m[2])
				if !ok && job.Environment != "" {
					s, ok = gh.Secret(repo, "", m[2]) // a repository secret is visible in every environment
				}
				if !ok {
					s = ""
				}
				inputs[k] = s
			case m[1] == "inputs":
				inputs[k] = m[3] // not dispatched: the default
			default:
				t.Fatalf("the workflow reads %s.%s, which init does not write", m[1], m[2])
			}
		}
	}
	env := map[string]string{}
	for _, st := range action.Runs.Steps {
		if st.ID != "run" {
			continue
		}
		for k, v := range st.Env {
			if m := ref.FindStringSubmatch(v); m != nil && m[1] == "inputs" {
				env[k] = inputs[m[2]]
			}
		}
	}
	return env
}

// objectStorageKeys plays Scaleway's link from IAM to Object Storage, which the stand-ins do not
// share: every API key whose access key is a value of env (the workflow's) is made known to the S3
// server with what its application's IAM policies grant on Object Storage, read from the Scaleway
// stand-in through the real SDK (ObjectStorageFullAccess: everything, on every bucket of the
// project; ObjectStorageObjectsRead: reads, where a bucket policy grants them; neither: nothing).
func objectStorageKeys(ctx context.Context, t *testing.T, w *world.World, env map[string]string) {
	t.Helper()
	c, err := scw.NewClient(scw.WithAPIURL(w.ScalewayURL), scw.WithAuth(w.AccessKey, w.SecretKey), scw.WithDefaultOrganizationID(world.OrganizationID))
	if err != nil {
		t.Fatal(err)
	}
	api := iam.NewAPI(c)
	for _, pair := range [][2]string{{"SCW_ACCESS_KEY", "SCW_SECRET_KEY"}, {"POC_PRESIGN_ACCESS_KEY", "POC_PRESIGN_SECRET_KEY"}} {
		ak, sk := env[pair[0]], env[pair[1]]
		if ak == "" || ak == w.AccessKey {
			continue
		}
		key, err := api.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: ak}, scw.WithContext(ctx))
		if err != nil || key.ApplicationID == nil {
			t.Fatalf("the API key %s (%s) is not an application's in the Scaleway stand-in: %v", ak, pair[0], err)
		}
		access := objstore.AccessNone
		pols, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{*key.ApplicationID}}, scw.WithContext(ctx), scw.WithAllPages())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pols.Policies {
			rules, err := api.ListRules(&iam.ListRulesRequest{PolicyID: p.ID}, scw.WithContext(ctx), scw.WithAllPages())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules.Rules {
				for _, set := range *r.PermissionSetNames {
					switch {
					case set == "ObjectStorageFullAccess":
						access = objstore.AccessFull
					case set == "ObjectStorageObjectsRead" && access == objstore.AccessNone:
						access = objstore.AccessObjectsRead
					}
				}
			}
		}
		add := w.S3.AddUser // a bucket policy must then grant it what it reads: the stricter reading
		if access == objstore.AccessFull {
			add = w.S3.AddProjectKey
		}
		if err := add(ctx, ak, sk); err != nil {
			t.Fatal(err)
		}
		w.S3.GrantIAM(ak, access)
	}
}

// The issue's "done when": in the emulated world, `bot init --iam` (which makes the bot's Scaleway
// identity and the buckets) then merging its pull request, and the first `/poc up` works with no
// other step; a second `bot init` changes nothing: no write to GitHub, to Scaleway or to Object
// Storage.
func TestInitThenFirstUp(t *testing.T) {
	if _, err := objstore.LookVersity(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err) // the buckets' versioning and lifecycle need the real S3 server
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "versitygw"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var s3mu sync.Mutex
	var s3writes []string
	w.S3.Observe(func(method, path string, _ http.Header) {
		if method != http.MethodGet && method != http.MethodHead {
			s3mu.Lock()
			s3writes = append(s3writes, method+" "+path)
			s3mu.Unlock()
		}
	})
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "ada", "admin")
	w.GitHub.SetPermission(repo, "alice", "maintain")
	token := w.GitHub.AddUserToken("ada")
	laptop := map[string]string{"GH_TOKEN": token}
	for _, kv := range w.Env() {
		laptop[kv[0]] = kv[1]
	}
	delete(laptop, "POC_STATE_KEY") // init generates it
	initCmd := func() (string, error) {
		var so, se bytes.Buffer
		a := newApp(&so, &se, func(k string) string { return laptop[k] })
		err := a.dispatch(ctx, []string{"init", "--repo", repo, "--iam", "--action", "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"})
		return so.String() + se.String(), err
	}

	// 1. bot init
	out, err := initCmd()
	if err != nil {
		t.Fatalf("bot init: %v\n%s", err, out)
	}
	prs := w.GitHub.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("open pull requests after init: %v\n%s", prs, out)
	}
	for _, v := range []string{laptop["SCW_SECRET_KEY"]} {
		if strings.Contains(out, v) {
			t.Fatalf("init printed a secret:\n%s", out)
		}
	}
	// 2. the maintainer merges it
	for n := range prs {
		if err := w.GitHub.MergePR(repo, n); err != nil {
			t.Fatal(err)
		}
	}
	s3mu.Lock()
	if len(s3writes) != 4 { // each bucket: versioning and lifecycle (the world made them)
		t.Errorf("the first init's writes to Object Storage: %v, want versioning and lifecycle of both buckets", s3writes)
	}
	s3writes = nil
	s3mu.Unlock()
	// A second init changes nothing.
	before := len(w.GitHub.Requests())
	w.Scaleway.ResetCalls()
	if out, err := initCmd(); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	for _, r := range w.GitHub.Requests()[before:] {
		if r.Method != "GET" {
			t.Errorf("the second init made %s %s on GitHub", r.Method, r.Path)
		}
	}
	for _, c := range w.Scaleway.Calls() {
		if c.Method != "GET" {
			t.Errorf("the second init made %s %s on Scaleway", c.Method, c.Path)
		}
	}
	s3mu.Lock()
	if len(s3writes) != 0 {
		t.Errorf("the second init wrote to Object Storage: %v", s3writes)
	}
	s3mu.Unlock()

	// 3. /poc up, run as the merged workflow runs it: with the key init made (--iam), not the laptop's.
	env := workflowEnv(t, w.GitHub, repo)
	objectStorageKeys(ctx, t, w, env)
	if env["SCW_ACCESS_KEY"] == laptop["SCW_ACCESS_KEY"] || env["SCW_SECRET_KEY"] == laptop["SCW_SECRET_KEY"] {
		t.Fatal("init --iam wrote the administrator's key as the bot's")
	}
	for _, k := range []string{"POC_STATE_KEY", "SCW_SECRET_KEY", "POC_APP_PRIVATE_KEY", "POC_STATE_URL"} {
		if env[k] == "" {
			t.Fatalf("the workflow gives the bot no %s", k)
		}
	}
	// Where the real services would be: the world's endpoints (not secrets; defaults in production).
	for _, k := range []string{"SCW_API_URL", "GITHUB_API_URL", "POC_IMAGE_FACTORY_URL", "POC_RESCUE_SSH_PORT", "POC_POLL_INTERVAL", "POC_RUNNER_CIDR", "SCW_DEFAULT_ZONE", "SCW_DEFAULT_REGION"} {
		env[k] = laptop[k]
	}
	number := w.GitHub.AddIssue(repo, ghsim.Issue{Number: 7, Title: "try it", Author: "alice"})
	id := w.GitHub.AddComment(repo, number, "alice", "/poc up")
	dir := t.TempDir()
	event := filepath.Join(dir, "event.json")
	if err := os.WriteFile(event, ghsim.CommentPayload(repo, number, id, "alice", w.GitHub.UserID("alice"), "/poc up", w.GitHub.InstallationID(repo)), 0o600); err != nil {
		t.Fatal(err)
	}
	env["GITHUB_EVENT_NAME"], env["GITHUB_EVENT_PATH"], env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"] = "issue_comment", event, repo, "1"
	env["POC_STICKY_INTERVAL"], env["POC_REAP_ON_EVENTS"] = "1s", "false"
	var so, se bytes.Buffer
	a := newApp(&so, &se, func(k string) string { return env[k] })
	if err := a.dispatch(ctx, []string{"handle"}); err != nil {
		t.Fatalf("bot handle /poc up: %v\n%s", err, se.String())
	}
	var status string
	for _, c := range w.GitHub.Comments(repo, number) {
		if c.Author != "alice" {
			status += c.Body + "\n"
		}
	}
	t.Logf("status comment:\n%s", status)
	if !strings.Contains(status, "Kubernetes API") {
		t.Fatalf("no endpoint in the bot's comments:\n%s\nlog:\n%s", status, se.String())
	}

	// A set-up fault: the reply says what is wrong (the fast part of bot doctor).
	env["POC_STATE_KEY"] = ""
	id = w.GitHub.AddComment(repo, number, "alice", "/poc status")
	if err := os.WriteFile(event, ghsim.CommentPayload(repo, number, id, "alice", w.GitHub.UserID("alice"), "/poc status", w.GitHub.InstallationID(repo)), 0o600); err != nil {
		t.Fatal(err)
	}
	a = newApp(&so, &se, func(k string) string { return env[k] })
	_ = a.dispatch(ctx, []string{"handle"})
	var reply string
	for _, c := range w.GitHub.Comments(repo, number) {
		if c.Author != "alice" && strings.Contains(c.Body, "Failed") {
			reply = c.Body
		}
	}
	if !strings.Contains(reply, "set-up checks") || !strings.Contains(reply, "POC_STATE_KEY is empty in this run") || !strings.Contains(reply, "bot init --repo acme/shop") {
		t.Fatalf("the failure reply does not say what is wrong:\n%s", reply)
	}
}

// doctorRun runs `bot doctor` in-process with env and extra arguments.
func doctorRun(ctx context.Context, env map[string]string, args ...string) (string, error) {
	var so, se bytes.Buffer
	a := newApp(&so, &se, func(k string) string { return env[k] })
	err := a.dispatch(ctx, append([]string{"doctor"}, args...))
	return so.String() + se.String(), err
}

// `bot doctor` passes on what `bot init` set up, and fails naming the cause on a missing secret, a
// key without a permission set the bot needs, and a bucket without conditional writes.
func TestDoctor(t *testing.T) {
	if _, err := objstore.LookVersity(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	// Object Storage is the versitygw stand-in: init turns the buckets' versioning on and adds the
	// lifecycle rule, which doctor checks.
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "versitygw"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var s3mu sync.Mutex
	var s3writes []string
	w.S3.Observe(func(method, path string, _ http.Header) {
		if method != http.MethodGet && method != http.MethodHead {
			s3mu.Lock()
			s3writes = append(s3writes, method+" "+path)
			s3mu.Unlock()
		}
	})
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "ada", "admin")
	laptop := map[string]string{"GH_TOKEN": w.GitHub.AddUserToken("ada")}
	for _, kv := range w.Env() {
		laptop[kv[0]] = kv[1]
	}
	var so bytes.Buffer
	a := newApp(&so, &so, func(k string) string { return laptop[k] })
	if err := a.dispatch(ctx, []string{"init", "--repo", repo, "--action", "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"}); err != nil {
		t.Fatalf("init: %v\n%s", err, so.String())
	}
	for n := range w.GitHub.PullRequests(repo) {
		if err := w.GitHub.MergePR(repo, n); err != nil {
			t.Fatal(err)
		}
	}

	s3mu.Lock()
	if len(s3writes) != 4 { // each bucket existed: versioning and lifecycle, twice
		t.Errorf("init's writes to Object Storage: %v, want versioning and lifecycle of both buckets\n%s", s3writes, so.String())
	}
	s3writes = nil
	s3mu.Unlock()
	if out, err := initAgain(ctx, laptop, repo); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	s3mu.Lock()
	if len(s3writes) != 0 {
		t.Errorf("the second init wrote to Object Storage: %v", s3writes)
	}
	s3mu.Unlock()

	out, err := doctorRun(ctx, laptop, "--repo", repo)
	if err != nil {
		t.Fatalf("doctor on a fresh installation: %v\n%s", err, out)
	}
	for _, want := range []string{"✓ App installation", "secrets                  8 required secrets in the environment poc", "✓ workflow pin", "✓ IAM permissions", "✓ state store", "✓ versioning, lifecycle", "✓ quota, stock headroom    one default cluster fits"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's checklist lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, laptop["SCW_SECRET_KEY"]) || strings.Contains(out, laptop["POC_STATE_KEY"]) {
		t.Errorf("doctor printed a secret:\n%s", out)
	}

	t.Run("missing secret", func(t *testing.T) {
		w.GitHub.DeleteSecret(repo, "poc", "SCW_SECRET_KEY")
		defer func() {
			if _, err := initAgain(ctx, laptop, repo); err != nil {
				t.Fatal(err)
			}
		}()
		out, err := doctorRun(ctx, laptop, "--repo", repo)
		if err == nil || !regexp.MustCompile(`✗ secrets +missing in the environment poc: SCW_SECRET_KEY`).MatchString(out) || !strings.Contains(out, "bot init --repo acme/shop") {
			t.Fatalf("doctor with SCW_SECRET_KEY deleted: %v\n%s", err, out)
		}
	})

	t.Run("key without a needed permission", func(t *testing.T) {
		w.Scaleway.AddAPIKey("SCWLIMITEDKEY0000000", "limited-secret", "pocbot-limited", world.ProjectID, "InstancesFullAccess", "BlockStorageFullAccess", "SSHKeysFullAccess", "DomainsDNSFullAccess", "ObjectStorageFullAccess")
		out, err := doctorRun(ctx, laptop, "--repo", repo, "--key", "SCWLIMITEDKEY0000000")
		if err == nil || !regexp.MustCompile(`✗ IAM permissions .*lacks on project \S+: ElasticMetalFullAccess`).MatchString(out) {
			t.Fatalf("doctor on a key without ElasticMetalFullAccess: %v\n%s", err, out)
		}
	})

	t.Run("bucket without conditional writes", func(t *testing.T) {
		s3, err := objstore.StartVersity(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s3.Close()
		if err := s3.CreateBucket(ctx, "state"); err != nil {
			t.Fatal(err)
		}
		// An S3 clone that ignores conditions, as its client sees it: a write refused for its
		// precondition is answered as done (the headers themselves are signed, so they stay).
		target, _ := url.Parse(s3.Endpoint)
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ModifyResponse = func(resp *http.Response) error {
			if resp.StatusCode == http.StatusPreconditionFailed && resp.Request.Method != http.MethodGet {
				resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
				resp.Header.Set("ETag", `"00000000000000000000000000000001"`)
				resp.Body = io.NopCloser(strings.NewReader(""))
				resp.ContentLength = 0
				resp.Header.Del("Content-Length")
			}
			return nil
		}
		strip := httptest.NewServer(proxy)
		defer strip.Close()
		env := map[string]string{}
		for k, v := range laptop {
			env[k] = v
		}
		env["POC_STATE_URL"] = "s3://state?endpoint=" + url.QueryEscape(strip.URL) + "&region=fr-par&use_path_style=true"
		env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = s3.AccessKey, s3.SecretKey
		// The same bucket straight: passes (the check sees the server, not the proxy's absence).
		direct := map[string]string{}
		for k, v := range env {
			direct[k] = v
		}
		direct["POC_STATE_URL"] = s3.BucketURL("state")
		if out, err := doctorRun(ctx, direct, "--repo", repo); err != nil || !strings.Contains(out, "✓ presigned link") || !strings.Contains(out, "✓ versioning, lifecycle") {
			t.Fatalf("doctor on versitygw directly: %v\n%s", err, out)
		}
		out, err := doctorRun(ctx, env, "--repo", repo)
		if err == nil || !strings.Contains(out, "✗ state store") || !strings.Contains(out, "does not honour conditional writes") {
			t.Fatalf("doctor on a bucket without conditional writes: %v\n%s", err, out)
		}
	})
}

func initAgain(ctx context.Context, env map[string]string, repo string) (string, error) {
	var so bytes.Buffer
	a := newApp(&so, &so, func(k string) string { return env[k] })
	err := a.dispatch(ctx, []string{"init", "--repo", repo, "--action", "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"})
	return so.String(), err
}
