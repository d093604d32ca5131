package main

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// `bot uninstall` removes what `bot init --iam` made (secrets, identities, buckets), refuses while a
// cluster's state exists, prints a plan with --dry-run, and a rerun after it has nothing to do.
func TestUninstall(t *testing.T) {
	objstoretest.Require(t)
	ctx, w := startWorld(t, 3*time.Minute, world.Options{S3: "versitygw"})
	s3writes := objstoretest.Writes(w.S3)
	s3count := func() int { return len(s3writes()) }
	const repo = "acme/shop"
	laptop := adminLaptop(w, repo)
	run := func(args ...string) (string, error) { return runBotOut(ctx, laptop, args...) }
	if out, err := run("init", "--repo", repo, "--iam", "--action", testActionRef); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	} else if !regexp.MustCompile(`aws s3api put-bucket-policy --bucket pocbot-state .*"SCW":\["application_id:[0-9a-f-]{36}","(user|application)_id:[0-9a-f-]{36}"\]`).MatchString(out) {
		t.Errorf("init --iam does not print the state bucket's policy with the ids filled in:\n%s", out)
	}
	if _, ok := w.GitHub.Secret(repo, "poc", "POC_STATE_KEY"); !ok {
		t.Fatal("init wrote no POC_STATE_KEY")
	}
	laptop["POC_STATE_KEY"], _ = w.GitHub.Secret(repo, "poc", "POC_STATE_KEY")

	// A cluster is up: refused, nothing removed.
	var discard bytes.Buffer
	st, err := newApp(&discard, &discard, func(k string) string { return laptop[k] }).openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc := &statestore.Document{Header: statestore.Header{Cluster: "acme-shop-7", Repository: repo}, Body: []byte("{}")}
	if err := st.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	ghBefore, _ := len(w.GitHub.Requests()), s3count()
	out, err := run("uninstall", "--repo", repo, "--iam", "--buckets")
	if !errors.Is(err, repoinit.ErrClustersLeft) || !strings.Contains(err.Error(), "acme-shop-7") || !strings.Contains(err.Error(), "/poc down") {
		t.Fatalf("uninstall with a cluster up: %v\n%s", err, out)
	}
	githubReadOnly(t, w, ghBefore, "the refused uninstall")
	if n := s3count(); n != 0 {
		t.Errorf("the refused uninstall made %d writes to Object Storage", n)
	}
	if err := st.Delete(ctx, doc); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	s3count()

	// --dry-run: a plan, no write.
	ghBefore = len(w.GitHub.Requests())
	out, err = run("uninstall", "--repo", repo, "--iam", "--buckets", "--dry-run")
	if err != nil || !strings.Contains(out, "- would delete the secret POC_STATE_KEY of the environment poc") ||
		!strings.Contains(out, "- would delete the environment poc") ||
		!strings.Contains(out, "- would delete the IAM application pocbot-presign") || !strings.Contains(out, "- would empty (every version) and delete the state bucket") {
		t.Fatalf("uninstall --dry-run: %v\n%s", err, out)
	}
	githubReadOnly(t, w, ghBefore, "the dry run")
	if n := s3count(); n != 0 {
		t.Errorf("the dry run made %d writes to Object Storage", n)
	}

	out, err = run("uninstall", "--repo", repo, "--iam", "--buckets")
	if err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if exists, _ := w.GitHub.Environment(repo, "poc"); exists { // failed on the old code: no DELETE of it
		t.Errorf("the environment poc that init made is left:\n%s", out)
	}
	for _, want := range []string{"- environment poc", "- IAM application pocbot-1", "- IAM application pocbot-presign-1", "- image bucket pocbot-images", "- state bucket pocbot-state"} {
		if !strings.Contains(out, want) {
			t.Errorf("uninstall's output lacks %q:\n%s", want, out)
		}
	}
	required, optional := repoinit.Secrets()
	for _, n := range append(required, optional...) {
		if _, ok := w.GitHub.Secret(repo, "poc", n); ok {
			t.Errorf("secret %s left in the environment", n)
		}
		if _, ok := w.GitHub.Secret(repo, "", n); ok {
			t.Errorf("repository secret %s left", n)
		}
	}
	for _, b := range []string{world.StateBucket, world.ImageBucket} {
		if _, err := w.S3.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)}); err == nil {
			t.Errorf("bucket %s left", b)
		}
	}
	if strings.Contains(out, laptop["POC_STATE_KEY"]) || strings.Contains(out, laptop["SCW_SECRET_KEY"]) {
		t.Errorf("uninstall printed a secret:\n%s", out)
	}
	if n := s3count(); n < 2 {
		t.Errorf("uninstall made %d writes to Object Storage: the two buckets at least", n)
	}
	// A rerun has nothing left to do.
	ghBefore = len(w.GitHub.Requests())
	out, err = run("uninstall", "--repo", repo, "--iam", "--buckets")
	if err != nil || !strings.Contains(out, "Nothing left to remove") || !strings.Contains(out, "state bucket acme") && !strings.Contains(out, ": gone") {
		t.Fatalf("second uninstall: %v\n%s", err, out)
	}
	if strings.Contains(out, "IAM application") {
		t.Errorf("the second uninstall found an IAM application:\n%s", out)
	}
	githubReadOnly(t, w, ghBefore, "the second uninstall")
	if n := s3count(); n != 0 {
		t.Errorf("the second uninstall made %d writes to Object Storage", n)
	}
}
