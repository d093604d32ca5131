package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// doctorRun runs `bot doctor` in-process with env and extra arguments.
func doctorRun(ctx context.Context, env map[string]string, args ...string) (string, error) {
	return runBotOut(ctx, env, append([]string{"doctor"}, args...)...)
}

// `bot doctor` passes on what `bot init` set up, and fails naming the cause on a missing secret, a
// key without a permission set the bot needs, and a bucket without conditional writes.
func TestDoctor(t *testing.T) {
	t.Parallel()
	objstoretest.Require(t)
	// Object Storage is the versitygw stand-in: init turns the buckets' versioning on and adds the
	// lifecycle rule, which doctor checks.
	ctx, w := startWorld(t, 4*time.Minute, world.Options{S3: "versitygw"})
	s3writes := objstoretest.Writes(w.S3)
	const repo = "acme/shop"
	laptop := laptop(w, repo)
	initOut, err := initRepo(ctx, laptop, repo)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, initOut)
	}
	for n := range w.GitHub.PullRequests(repo) {
		if err := w.GitHub.MergePR(repo, n); err != nil {
			t.Fatal(err)
		}
	}

	if ws := s3writes(); len(ws) != 4 { // each bucket existed: versioning and lifecycle, twice
		t.Errorf("init's writes to Object Storage: %v, want versioning and lifecycle of both buckets\n%s", ws, initOut)
	}
	if out, err := initRepo(ctx, laptop, repo); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if ws := s3writes(); len(ws) != 0 {
		t.Errorf("the second init wrote to Object Storage: %v", ws)
	}

	out, err := doctorRun(ctx, laptop, "--repo", repo)
	if err != nil {
		t.Fatalf("doctor on a fresh installation: %v\n%s", err, out)
	}
	for _, want := range []string{"✓ App installation", "secrets                  8 required secrets in the environment poc", "✓ workflow pin", "– IAM permissions", "✓ state store", "✓ versioning, lifecycle", "✓ Cilium chart", "✓ quota, stock headroom    one default cluster fits", "– warm pool fit", "no warm pool (pool.size 0 in .github/poc.yml of acme/shop's default branch)"} {
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
			if _, err := initRepo(ctx, laptop, repo); err != nil {
				t.Fatal(err)
			}
		}()
		out, err := doctorRun(ctx, laptop, "--repo", repo)
		if err == nil || !regexp.MustCompile(`✗ secrets +missing in the environment poc: SCW_SECRET_KEY`).MatchString(out) || !strings.Contains(out, "bot init --repo acme/shop") {
			t.Fatalf("doctor with SCW_SECRET_KEY deleted: %v\n%s", err, out)
		}
	})

	// The bot's own key may not read IAM (the item above is not checked); an administrator's
	// key reads the bot key's policies.
	admin := adminLaptop(w, repo)
	t.Run("the bot key's permission sets, read with an administrator's key", func(t *testing.T) {
		out, err := doctorRun(ctx, admin, "--repo", repo, "--key", w.AccessKey)
		if err != nil || !strings.Contains(out, "✓ IAM permissions          all 7 permission sets") {
			t.Fatalf("doctor with the owner's key on the bot's: %v\n%s", err, out)
		}
	})

	t.Run("key without a needed permission", func(t *testing.T) {
		w.Scaleway.AddAPIKey("SCWLIMITEDKEY0000000", "limited-secret", "pocbot-limited", world.ProjectID, "InstancesFullAccess", "BlockStorageFullAccess", "SSHKeysFullAccess", "DomainsDNSFullAccess", "ObjectStorageFullAccess")
		out, err := doctorRun(ctx, admin, "--repo", repo, "--key", "SCWLIMITEDKEY0000000")
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

// doctor's quota item fails, naming the quota, where one default cluster would be refused; it
// passes with Scaleway's documented quotas.
func TestDoctorHeadroom(t *testing.T) {
	for _, tc := range []struct {
		name string
		ips  int
		fail bool
		want string
	}{
		{"documented quotas", 20, false, "✓ quota, stock headroom    one default cluster fits"},
		{"no flexible IP left", 0, true, "✗ quota, stock headroom    one default cluster would be refused: Scaleway quota of Instance flexible IPs would be exceeded: limit 0 (the organization's quota " + scwsim.QuotaIPs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := scwsim.DocumentedQuotas()
			q[scwsim.QuotaIPs] = tc.ips
			ctx, w := startWorld(t, 2*time.Minute, world.Options{OrgQuotas: q})
			out, err := doctorRun(ctx, envMap(w))
			if (err != nil) != tc.fail || !strings.Contains(out, tc.want) {
				t.Fatalf("doctor: %v, want failure %v and %q:\n%s", err, tc.fail, tc.want, out)
			}
		})
	}
}
