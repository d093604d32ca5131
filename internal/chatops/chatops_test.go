package chatops_test

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
)

var curlRE = regexp.MustCompile(`curl -fsS '([^']+)' \| age -d`)

// TestCommentsEndToEnd plays every comment case against one emulated world: what must not run
// first (and costs no Scaleway call), then a maintainer's whole up → cost → status → extend →
// kubeconfig → down, then a down while an up runs. Each step asserts what GitHub and Scaleway saw.
func TestCommentsEndToEnd(t *testing.T) {
	t.Parallel()
	const repo = "acme/shop"
	h, ctx := scene{repo: repo, users: []string{"alice:maintain", "bob:read", "carol:write"}, timeout: 4 * time.Minute}.open(t)
	gh := h.gh
	alicePub, aliceID := sshUser(t)
	gh.AddUserKey("alice", alicePub)
	gh.AddUserKey("alice", ecdsaKey)
	gh.AddIssue(repo, ghsim.Issue{Number: 42, Title: "Try the ingress", Author: "alice"})
	gh.AddIssue(repo, ghsim.Issue{Number: 43, Title: "Cancel me", Author: "alice"})

	// --- What must not run: no Scaleway call at all. ---
	calls0 := h.calls()
	t.Run("bot's own comment is ignored", func(t *testing.T) {
		ev := h.comment(repo, 42, false, gh.BotLogin(), "> /poc up\n/poc up")
		out, err := h.handle(ctx, ev)
		if err != nil || out.Ignored == "" {
			t.Fatalf("outcome %+v, err %v: want ignored", out, err)
		}
		if r := h.reactions(repo, 42, ev.CommentID); len(r) != 0 {
			t.Errorf("reactions on the bot's comment: %v", r)
		}
	})
	t.Run("comment without a command is ignored", func(t *testing.T) {
		out, err := h.handle(ctx, h.comment(repo, 42, false, "alice", "looks good\n```\n/poc up\n```"))
		if err != nil || out.Ignored == "" {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
	})
	t.Run("read-only user's up is refused", func(t *testing.T) {
		ev := h.comment(repo, 42, false, "bob", "/poc up")
		out, err := h.handle(ctx, ev)
		if err != nil || out.Refused == "" || out.OK {
			t.Fatalf("outcome %+v, err %v: want a refusal", out, err)
		}
		if got := h.reactions(repo, 42, ev.CommentID); strings.Join(got, ",") != "eyes,confused" {
			t.Errorf("reactions = %v, want eyes then confused", got)
		}
		last := lastBody(h, repo, 42)
		if !strings.Contains(last, "needs at least **write**") || !strings.Contains(last, "you have **read**") {
			t.Errorf("refusal reply does not name the levels:\n%s", last)
		}
	})
	t.Run("bad flag gets the usage", func(t *testing.T) {
		ev := h.comment(repo, 42, false, "alice", "/poc up --ttl 8h --colour blue")
		out, err := h.handle(ctx, ev)
		if err != nil || out.Refused != "parse error" {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		last := lastBody(h, repo, 42)
		if !strings.Contains(last, "unknown flag") || !strings.Contains(last, "--ttl DURATION") {
			t.Errorf("reply lacks the error or the usage:\n%s", last)
		}
	})
	t.Run("help", func(t *testing.T) {
		holds(t, "help reply", h.answered(ctx, t, repo, 42, "bob", "/poc"), "/poc extend DURATION")
	})
	if d := h.calls() - calls0; d != 0 {
		t.Fatalf("refused, ignored and malformed commands made %d Scaleway calls, want 0", d)
	}
	if h.opens != 0 {
		t.Fatalf("the backend was opened %d times for commands that needed none", h.opens)
	}

	// --- A maintainer's up: sticky comment edited in place, two new comments, the link. ---
	name := commands.ClusterName("acme", "shop", 42)
	var stickyID int64
	t.Run("maintainer up", func(t *testing.T) {
		before := len(h.botComments(repo, 42))
		ev := h.comment(repo, 42, false, "alice", "/poc up --ttl 2h --admin-cidr 203.0.113.0/24 --admin-cidr 127.0.0.1/32")
		calls := len(h.w.Scaleway.Calls())
		t0 := time.Now()
		out, err := h.handle(ctx, ev)
		if err != nil || !out.OK {
			t.Fatalf("up: outcome %+v, err %v\n%s", out, err, lastBody(h, repo, 42))
		}
		// The up quotes its cluster more than once (the budget, the reply); the catalog is listed
		// once for them all (cost.PriceReuse).
		listed := map[string]int{}
		for _, c := range h.w.Scaleway.Calls()[calls:] {
			if strings.HasPrefix(c.Path, "/product-catalog/") {
				listed[c.Query]++
			}
		}
		for q, n := range listed {
			if n != 1 {
				t.Errorf("the up listed the product catalog %d times with %q, want once", n, q)
			}
		}
		if len(listed) == 0 {
			t.Errorf("the up never listed the product catalog: its quotes priced nothing from the API")
		}
		t.Logf("up answered in %s; 👀 after %s", time.Since(t0).Round(time.Millisecond), out.EyesAfter.Round(time.Microsecond))
		if got := h.reactions(repo, 42, ev.CommentID); strings.Join(got, ",") != "eyes,rocket,hooray" {
			t.Errorf("reactions = %v, want eyes, rocket, hooray", got)
		}
		bot := h.botComments(repo, 42)
		if n := len(bot) - before; n != 2 || out.NewComments != 2 {
			t.Fatalf("up posted %d new comments (outcome says %d), want 2 (sticky + notification)", n, out.NewComments)
		}
		sticky, notify := bot[len(bot)-2], bot[len(bot)-1]
		stickyID = sticky.ID
		if !strings.Contains(sticky.Body, commands.StickyMarker(name)) || sticky.Edits < 2 {
			t.Errorf("sticky comment: marker present=%v, edits=%d (want the progress edited in place)",
				strings.Contains(sticky.Body, commands.StickyMarker(name)), sticky.Edits)
		}
		for _, want := range []string{":6443", ":50000", "203.0.113.0/24", "per day", "/poc extend 4h", "Steps (", "https://github.com/acme/shop/actions/runs/"} {
			if !strings.Contains(sticky.Body, want) {
				t.Errorf("final sticky body lacks %q:\n%s", want, sticky.Body)
			}
		}
		if strings.Contains(sticky.Body, "0.0.0.0/0") {
			t.Errorf("restricted admin CIDR but the body warns about 0.0.0.0/0")
		}
		if !strings.Contains(notify.Body, "@alice") || !strings.Contains(notify.Body, "#issuecomment-") {
			t.Errorf("notification does not mention alice or link the sticky comment: %s", notify.Body)
		}
		// The header remembers the daily cost (and the status comment's id once a run found it
		// before its operation: this up made it).
		doc, err := h.backend.Ops.Store.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := clusterops.MetaOf(doc.Header); err != nil || m.DailyCostNanos == 0 {
			t.Errorf("header labels = %v, want the daily cost", doc.Header.Labels)
		}
		if got := doc.Header.Expires.Sub(doc.Header.Created); got != 2*time.Hour {
			t.Errorf("expiry = created + %s, want 2h", got)
		}
		// The link decrypts with alice's key to the cluster's kubeconfig.
		m := curlRE.FindStringSubmatch(sticky.Body)
		if m == nil {
			t.Fatalf("no kubeconfig command in the body:\n%s", sticky.Body)
		}
		if h.output.Len() == 0 || !strings.Contains(h.output.String(), "kubeconfig_url<<") || !strings.Contains(h.output.String(), m[1]) {
			t.Errorf("step outputs lack kubeconfig_url: %q", h.output.String())
		}
		for _, o := range []string{"cluster", "api_endpoint"} {
			if out.Outputs[o] == "" {
				t.Errorf("step output %s not set: %v", o, out.Outputs)
			}
		}
		if !strings.Contains(h.summary.String(), "is ready") || !strings.Contains(h.actions.String(), "::group::") {
			t.Errorf("job summary or groups missing: summary %q", h.summary.String())
		}
		plain := fetchAndDecrypt(t, m[1], aliceID)
		want, err := h.backend.Ops.Kubeconfig(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if string(plain) != string(want) {
			t.Errorf("decrypted kubeconfig differs from the cluster's (%d vs %d bytes)", len(plain), len(want))
		}
	})
	if t.Failed() {
		return
	}
	t.Run("second up converges and edits the same sticky comment", func(t *testing.T) {
		before := len(h.botComments(repo, 42))
		out, err := h.handle(ctx, h.comment(repo, 42, false, "alice", "/poc up --admin-cidr 203.0.113.0/24 --admin-cidr 127.0.0.1/32"))
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		bot := h.botComments(repo, 42)
		if n := len(bot) - before; n != 1 {
			t.Errorf("second up posted %d new comments, want 1 (the notification; the sticky is edited)", n)
		}
		if c := findComment(h, repo, 42, stickyID); c == nil || !strings.Contains(c.Body, "ready") {
			t.Errorf("sticky comment %d not updated to ready", stickyID)
		}
	})
	t.Run("cost", func(t *testing.T) {
		holds(t, "cost reply", h.answered(ctx, t, repo, 42, "bob", "/poc cost"), "Total per day", "PLAY2-NANO", "Accrued since creation", "Until expiry")
	})
	t.Run("status", func(t *testing.T) {
		gh.LabelIssue(repo, 42, "alice", "poc/keep") // a maintainer's label counts (issue 11 hole 8)
		last := h.answered(ctx, t, repo, 42, "bob", "/poc status", "poc/keep")
		// The readiness checks up waits for (talos.ReadyChecks), as bot status shows them too.
		holds(t, "status reply", last, "ready", "kubernetes-api", "talos-api cp-0", "nodes", "cilium", "cluster-dns", "routing", "pod-network",
			"Lock | free", "present: expiry paused", "Resources (")
		if strings.Contains(last, "❌") {
			t.Errorf("a health check failed on a ready cluster:\n%s", last)
		}
	})
	t.Run("extend within and beyond max_ttl", func(t *testing.T) {
		doc, _ := h.backend.Ops.Store.Get(ctx, name)
		exp0 := doc.Header.Expires
		out, err := h.handle(ctx, h.comment(repo, 42, false, "carol", "/poc extend 6d"))
		if err != nil || !out.OK {
			t.Fatalf("extend 6d: outcome %+v, err %v\n%s", out, err, lastBody(h, repo, 42))
		}
		doc, _ = h.backend.Ops.Store.Get(ctx, name)
		if got := doc.Header.Expires.Sub(exp0); got != 6*24*time.Hour {
			t.Errorf("extend 6d moved the expiry by %s", got)
		}
		// 6d + 2h + 2d from now is over the default max_ttl of 7d: refused through the update.
		out, err = h.handle(ctx, h.comment(repo, 42, false, "carol", "/poc extend 2d"))
		if err != nil || out.Refused != "max_ttl" {
			t.Fatalf("extend 2d: outcome %+v, err %v", out, err)
		}
		if last := lastBody(h, repo, 42); !strings.Contains(last, "max_ttl") {
			t.Errorf("refusal does not name max_ttl:\n%s", last)
		}
		doc2, _ := h.backend.Ops.Store.Get(ctx, name)
		if !doc2.Header.Expires.Equal(doc.Header.Expires) {
			t.Errorf("a refused extend changed the expiry")
		}
		// Over max_ttl in one go: the grammar refuses it.
		out, _ = h.handle(ctx, h.comment(repo, 42, false, "carol", "/poc extend 30d"))
		if out.Refused != "parse error" {
			t.Errorf("extend 30d: outcome %+v, want a parse refusal", out)
		}
	})
	t.Run("kubeconfig for a user without SSH keys", func(t *testing.T) {
		holds(t, "the reply to a user without keys", h.answered(ctx, t, repo, 42, "carol", "/poc kubeconfig"),
			"no public SSH key", "https://github.com/settings/ssh/new")
	})
	t.Run("kubeconfig through a dead link", func(t *testing.T) {
		// The presigning key has the bucket policy's grant on public/ but no IAM policy: on
		// Scaleway every link it signs answers 403. The bot tries the link first and never posts it.
		if h.w.S3 == nil {
			t.Fatal("this harness runs versitygw; the dead-link check needs S3")
		}
		const ak, sk = "PRESIGNNOIAM00000001", "presign-no-iam-secret-00000000000000001"
		if err := h.w.S3.AddUser(ctx, ak, sk); err != nil {
			t.Fatal(err)
		}
		if err := h.w.S3.PutBucketPolicy(ctx, world.StateBucket, `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
			"Principal": {"AWS": ["`+ak+`"]}, "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::`+world.StateBucket+`/public/*"]}]}`); err != nil {
			t.Fatal(err)
		}
		signer, err := h.w.S3.OpenBucketAs(ctx, world.StateBucket, ak, sk)
		if err != nil {
			t.Fatal(err)
		}
		defer signer.Close()
		main, err := h.w.S3.OpenBucket(ctx, world.StateBucket)
		if err != nil {
			t.Fatal(err)
		}
		defer main.Close()
		store, err := statestore.Open(ctx, statestore.Config{StateURL: h.w.StateURL, KeyURL: h.w.StateKey},
			statestore.WithBucket(main), statestore.WithPresignBucket(signer))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		saved := h.backend
		alt, ops := *saved, *saved.Ops
		ops.Store, alt.Ops = store, &ops
		h.backend = &alt
		defer func() { h.backend = saved }()
		out, err := h.handle(ctx, h.comment(repo, 42, false, "alice", "/poc kubeconfig"))
		if err != nil || out.OK || out.Refused != "dead link" {
			t.Fatalf("outcome %+v, err %v; want a refusal for a dead link", out, err)
		}
		last := lastBody(h, repo, 42)
		if strings.Contains(last, "X-Amz-") || strings.Contains(last, "curl") || !strings.Contains(last, "403") ||
			!strings.Contains(last, "ObjectStorageObjectsRead") {
			t.Errorf("the reply posts the dead link or does not say what to fix:\n%s", last)
		}
		if strings.Contains(h.output.String(), "kubeconfig_url") {
			t.Errorf("the dead link went to the step outputs: %q", h.output.String())
		}
		if _, err := h.w.S3.Client().DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(world.StateBucket)}); err != nil {
			t.Errorf("remove the test's bucket policy: %v", err)
		}
	})
	t.Run("down", func(t *testing.T) {
		before := len(h.botComments(repo, 42))
		ev := h.comment(repo, 42, false, "alice", "/poc down")
		out, err := h.handle(ctx, ev)
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if left := h.live(name); len(left) > 0 {
			t.Errorf("down left %v", left)
		}
		if n := len(h.botComments(repo, 42)) - before; n != 1 {
			t.Errorf("down posted %d new comments, want 1 (the sticky one is edited)", n)
		}
		c := findComment(h, repo, 42, stickyID)
		if c == nil || !strings.Contains(c.Body, "Deleted") || !strings.Contains(c.Body, "destroyed") {
			t.Errorf("sticky comment not turned into the teardown report")
		}
		if _, err := h.backend.Ops.Store.Get(ctx, name); !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("state still there after down: %v", err)
		}
	})

	t.Run("down while up runs", func(t *testing.T) {
		name43 := commands.ClusterName("acme", "shop", 43)
		upEv := h.comment(repo, 43, false, "alice", "/poc up")
		type result struct {
			out chatops.Outcome
			err error
		}
		upDone := make(chan result, 1)
		go func() {
			out, err := h.handle(ctx, upEv)
			upDone <- result{out, err}
		}()
		// Wait until the up has created something, so the down really interrupts it.
		deadline := time.Now().Add(time.Minute)
		for len(h.live(name43)) < 3 {
			if time.Now().After(deadline) {
				t.Fatal("the up created nothing within a minute")
			}
			time.Sleep(20 * time.Millisecond)
		}
		out, err := h.handle(ctx, h.comment(repo, 43, false, "alice", "/poc down"))
		if err != nil || !out.OK {
			t.Fatalf("down: outcome %+v, err %v", out, err)
		}
		var up result
		select {
		case up = <-upDone:
		case <-time.After(2 * time.Minute):
			t.Fatal("the up did not stop")
		}
		if up.out.OK {
			t.Errorf("the up finished although a down asked it to stop: %+v", up.out)
		}
		if up.err != nil && !errors.Is(up.err, chatops.ErrCommandFailed) {
			t.Errorf("up error: %v", up.err)
		}
		if left := h.live(name43); len(left) > 0 {
			t.Errorf("resources left after the down: %v", left)
		}
		if bot := h.botComments(repo, 43); len(bot) > 4 {
			t.Errorf("%d bot comments for two commands, want at most 4", len(bot))
		}
	})

	scanSecrets(t, h)
}

// TestBudgetAndConfig covers the repository configuration: a budget that refuses an up (nothing
// created), an invalid file answered with the key, a dry run that creates nothing.
func TestBudgetAndConfig(t *testing.T) {
	h, ctx := scene{timeout: 2 * time.Minute}.open(t)
	gh := h.gh
	for _, r := range []string{"acme/tight", "acme/broken"} {
		h.repo(r)
		gh.SetPermission(r, "alice", "admin")
		gh.AddIssue(r, ghsim.Issue{Number: 1, Author: "alice"})
	}
	gh.SetFile("acme/tight", "", ".github/poc.yml", []byte("max_daily_eur: 1\n"))
	// A PR head cannot raise its own budget: only the default branch counts.
	gh.SetFile("acme/tight", "feature", ".github/poc.yml", []byte("max_daily_eur: 1000\n"))
	gh.SetFile("acme/broken", "", ".github/poc.yml", []byte("max_clusterz: 3\n"))

	t.Run("budget refusal", func(t *testing.T) {
		out, err := h.handle(ctx, h.comment("acme/tight", 1, false, "alice", "/poc up"))
		if err != nil || out.Refused != "budget" {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		last := lastBody(h, "acme/tight", 1)
		if !strings.Contains(last, "max_daily_eur") || !strings.Contains(last, "Nothing was created") {
			t.Errorf("budget refusal:\n%s", last)
		}
		if left := h.live(commands.ClusterName("acme", "tight", 1)); len(left) > 0 {
			t.Errorf("a refused up created %v", left)
		}
	})
	t.Run("dry run creates nothing", func(t *testing.T) {
		inv := len(h.w.Scaleway.Inventory())
		out, err := h.handle(ctx, h.comment("acme/tight", 1, false, "alice", "/poc up --dry-run --cp-count 1"))
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		last := lastBody(h, "acme/tight", 1)
		if !strings.Contains(last, "dry run: nothing created") || !strings.Contains(last, "Total per day") {
			t.Errorf("plan reply:\n%s", last)
		}
		if len(h.w.Scaleway.Inventory()) != inv {
			t.Errorf("a dry run changed the inventory")
		}
		if _, err := h.backend.Ops.Store.Get(ctx, commands.ClusterName("acme", "tight", 1)); !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("a dry run wrote a state document: %v", err)
		}
	})
	t.Run("invalid configuration names the key", func(t *testing.T) {
		out, err := h.handle(ctx, h.comment("acme/broken", 1, false, "alice", "/poc up"))
		if err != nil || out.Refused == "" {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if last := lastBody(h, "acme/broken", 1); !strings.Contains(last, "max_clusterz") {
			t.Errorf("reply does not name the bad key:\n%s", last)
		}
	})
	t.Run("name collision is refused", func(t *testing.T) {
		// "acme-x/y" and "acme/x-y" share a cluster name; the header names the first.
		h.repo("acme-x/y")
		h.repo("acme/x-y")
		gh.SetPermission("acme/x-y", "alice", "admin")
		gh.AddIssue("acme/x-y", ghsim.Issue{Number: 5, Author: "alice"})
		name := commands.ClusterName("acme", "x-y", 5)
		if name != commands.ClusterName("acme-x", "y", 5) {
			t.Fatalf("names differ: the collision case is gone (%s)", name)
		}
		doc := &statestore.Document{Header: statestore.Header{Cluster: name, Repository: "acme-x/y", Number: 5, Created: time.Now()}, Body: []byte(`{"version":1}`)}
		if err := h.backend.Ops.Store.Put(ctx, doc); err != nil {
			t.Fatal(err)
		}
		calls := h.calls()
		out, err := h.handle(ctx, h.comment("acme/x-y", 5, false, "alice", "/poc down"))
		if err != nil || !strings.HasPrefix(out.Refused, "name collision") {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if d := h.calls() - calls; d != 0 {
			t.Errorf("a refused collision made %d Scaleway calls", d)
		}
	})
	t.Run("an unreadable state counts against the budget", func(t *testing.T) {
		h.repo("acme/one")
		gh.SetPermission("acme/one", "alice", "admin")
		gh.AddIssue("acme/one", ghsim.Issue{Number: 1, Author: "alice"})
		gh.SetFile("acme/one", "", ".github/poc.yml", []byte("max_clusters: 1\n"))
		b := worldtest.Bucket(t, h.w, world.StateBucket)
		if err := b.WriteAll(ctx, "clusters/garbage-1.state", []byte("not a state"), nil); err != nil {
			t.Fatal(err)
		}
		defer b.Delete(ctx, "clusters/garbage-1.state")
		out, err := h.handle(ctx, h.comment("acme/one", 1, false, "alice", "/poc up"))
		if err != nil || out.Refused != "budget" {
			t.Fatalf("outcome %+v, err %v: an unreadable state must count, not vanish", out, err)
		}
		if last := lastBody(h, "acme/one", 1); !strings.Contains(last, "max_clusters") {
			t.Errorf("budget refusal does not name max_clusters:\n%s", last)
		}
	})
	scanSecrets(t, h)
}

// TestPullRequests: labeled → up, synchronize → nothing, closed → down; a fork's label → nothing.
func TestPullRequests(t *testing.T) {
	const repo = "acme/web"
	h, ctx := scene{repo: repo, users: []string{"alice:write", "mallory:read"}, light: true}.open(t)
	gh := h.gh
	pr := gh.AddPR(repo, ghsim.PR{Number: 7, Author: "alice", Labels: []string{"poc"}})
	fork := gh.AddPR(repo, ghsim.PR{Number: 8, Author: "mallory", Fork: true, Labels: []string{"poc"}})
	draft := gh.AddPR(repo, ghsim.PR{Number: 9, Author: "alice", Draft: true, Labels: []string{"poc"}})
	name := commands.ClusterName("acme", "web", pr)

	t.Run("fork PR labeled: nothing", func(t *testing.T) {
		calls := h.calls()
		out, err := h.handle(ctx, h.prEvent(repo, fork, "labeled", "poc", true, false, false, "alice", "poc"))
		if err != nil || out.Ignored == "" {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if d := h.calls() - calls; d != 0 || len(h.botComments(repo, fork)) != 0 {
			t.Errorf("fork PR: %d Scaleway calls, %d comments; want none", d, len(h.botComments(repo, fork)))
		}
	})
	t.Run("draft PR labeled: nothing", func(t *testing.T) {
		out, err := h.handle(ctx, h.prEvent(repo, draft, "labeled", "poc", false, true, false, "alice", "poc"))
		if err != nil || !strings.Contains(out.Ignored, "draft") {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
	})
	t.Run("labeled after the PR was closed: nothing", func(t *testing.T) {
		late := gh.AddPR(repo, ghsim.PR{Number: 10, Author: "alice", Labels: []string{"poc"}})
		gh.SetIssueState(repo, late, false, false) // the close was handled first, with no cluster to remove
		calls := h.calls()
		out, err := h.handle(ctx, h.prEvent(repo, late, "labeled", "poc", false, false, false, "alice", "poc"))
		if err != nil || !strings.Contains(out.Ignored, "closed") {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if d := h.calls() - calls; d != 0 {
			t.Errorf("a closed PR's late label made %d Scaleway calls", d)
		}
	})
	t.Run("other label: nothing", func(t *testing.T) {
		out, err := h.handle(ctx, h.prEvent(repo, pr, "labeled", "bug", false, false, false, "alice", "poc", "bug"))
		if err != nil || out.Ignored == "" {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
	})
	t.Run("labeled poc: up", func(t *testing.T) {
		out, err := h.handle(ctx, h.prEvent(repo, pr, "labeled", "poc", false, false, false, "alice", "poc"))
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v\n%s", out, err, lastBody(h, repo, pr))
		}
		doc, err := h.backend.Ops.Store.Get(ctx, name)
		if err != nil || doc.Header.Kind != "pull" || doc.Header.Number != pr {
			t.Fatalf("PR cluster header: %+v, %v", doc, err)
		}
		if n := len(h.botComments(repo, pr)); n != 2 {
			t.Errorf("PR up posted %d comments, want 2", n)
		}
	})
	t.Run("synchronize: nothing", func(t *testing.T) {
		calls := h.calls()
		out, err := h.handle(ctx, h.prEvent(repo, pr, "synchronize", "", false, false, false, "alice", "poc"))
		if err != nil || out.Ignored == "" || h.calls() != calls {
			t.Fatalf("outcome %+v, err %v, calls %d", out, err, h.calls()-calls)
		}
	})
	t.Run("closed: down", func(t *testing.T) {
		out, err := h.handle(ctx, h.prEvent(repo, pr, "closed", "", false, false, true, "alice", "poc"))
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if left := h.live(name); len(left) > 0 {
			t.Errorf("closed PR left %v", left)
		}
	})
	t.Run("schedule without a reaper is logged, not an error", func(t *testing.T) {
		ev, err := github.DecodeEvent("schedule", []byte(`{"schedule":"*/30 * * * *"}`))
		if err != nil {
			t.Fatal(err)
		}
		ev.Owner, ev.Repo = "acme", "web"
		out, err := h.handle(ctx, ev)
		if err != nil || !strings.Contains(out.Ignored, "reaper") {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
	})
	scanSecrets(t, h)
}

func lastBody(h *harness, repo string, number int) string {
	bot := h.botComments(repo, number)
	if len(bot) == 0 {
		return ""
	}
	return bot[len(bot)-1].Body
}

func findComment(h *harness, repo string, number int, id int64) *ghsim.Comment {
	for _, c := range h.gh.Comments(repo, number) {
		if c.ID == id {
			return &c
		}
	}
	return nil
}

func fetchAndDecrypt(t *testing.T, url string, id age.Identity) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("fetch the kubeconfig link: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fetch the kubeconfig link: HTTP %d", resp.StatusCode)
	}
	r, err := age.Decrypt(resp.Body, id)
	if err != nil {
		t.Fatalf("decrypt the kubeconfig with the user's key: %v", err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scanSecrets checks every body posted and every log line: no key, token or kubeconfig content.
func scanSecrets(t *testing.T, h *harness) {
	t.Helper()
	n := 0
	for _, c := range h.gh.AllComments() {
		n++
		if commands.ContainsSecret(c.Body) {
			t.Errorf("comment %d on %s#%d contains a secret:\n%s", c.ID, c.Repo, c.Number, commands.Redact(c.Body))
		}
	}
	logs := h.logs.String()
	for i, line := range strings.Split(logs, "\n") {
		if commands.ContainsSecret(line) {
			t.Errorf("log line %d contains a secret: %s", i, commands.Redact(line))
		}
	}
	if n == 0 || len(logs) == 0 {
		t.Errorf("secret scan saw %d comments and %d bytes of logs: nothing to scan", n, len(logs))
	}
}
