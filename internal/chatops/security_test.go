package chatops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// ownComments are the comments the App itself wrote on an issue (not any bot's).
func ownComments(h *harness, repo string, number int) []ghsim.Comment {
	var out []ghsim.Comment
	for _, c := range h.gh.Comments(repo, number) {
		if c.Author == h.gh.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

// TestSecurityHoles replays, through `bot handle`'s handler against the GitHub stand-in, the
// attacks of issue 11 holes 3, 6, 8 and the chatops parts of 10.
func TestSecurityHoles(t *testing.T) {
	t.Parallel()
	const repo = "acme/sec"
	h, ctx := scene{repo: repo, users: []string{"alice:maintain", "trudy:triage", "erin:write"}, timeout: 4 * time.Minute}.open(t)
	gh := h.gh
	alicePub, aliceID := sshUser(t)
	gh.AddUserKey("alice", alicePub)
	gh.AddUserKey("erin", ecdsaKey)
	gh.AddUserKey("erin", "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIEX/dQ0v4127bEo8eeG1EV0ApO2lWbSnN6RCWTDnUv5OAAAABHNzaDo=")
	gh.AddIssue(repo, ghsim.Issue{Number: 1, Title: "spoofed status", Author: "alice"})
	gh.AddIssue(repo, ghsim.Issue{Number: 2, Title: "renamed requester", Author: "alice"})
	name := commands.ClusterName("acme", "sec", 1)

	t.Run("another bot's status comment and a triage user's keep label", func(t *testing.T) {
		// Hole 6: another App's comment carries the cluster's marker and the largest serial.
		spoof := gh.AddComment(repo, 1, "spoofer[bot]", commands.StickyMarker(name)+
			"\n<!-- pocbot:serial=9223372036854775807 -->\n### ✅ Cluster ready\n[kubeconfig](https://evil.example/kc)")
		// Hole 8: a triage user labels the issue poc/keep.
		gh.LabelIssue(repo, 1, "trudy", "poc/keep")
		out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up --ttl 1h", "poc/keep"))
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		var status []ghsim.Comment
		for _, c := range ownComments(h, repo, 1) {
			if strings.Contains(c.Body, commands.StickyMarker(name)) {
				status = append(status, c)
			}
		}
		if len(status) != 1 {
			t.Fatalf("the App wrote %d status comments for %s, want 1 (the spoof made it stand down?)", len(status), name)
		}
		body := status[0].Body
		m := curlRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("the App's status comment has no kubeconfig link:\n%s", body)
		}
		if kc := fetchAndDecrypt(t, m[1], aliceID); !strings.Contains(string(kc), "client-key-data") {
			t.Errorf("decrypted kubeconfig has no client key")
		}
		doc, err := h.backend.Ops.Store.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := clusterops.MetaOf(doc.Header); err != nil || m.RequesterID != gh.UserID("alice") {
			t.Errorf("header requester id = %d (%v), want alice's account id %d", m.RequesterID, err, gh.UserID("alice"))
		}
		if c := findComment(h, repo, 1, spoof); c == nil || c.Edits != 0 {
			t.Errorf("the spoofed comment was edited by the bot: %+v", c)
		}
		if strings.Contains(body, "paused by the `poc/keep` label") || !strings.Contains(body, "label is **ignored**") ||
			!strings.Contains(body, "`trudy`") || !strings.Contains(body, "**triage**") {
			t.Errorf("a triage user's keep label was honoured or not explained:\n%s", body)
		}
		// Hole 10: only the kubeconfig's secret values are masked, never generic lines.
		masks := h.masks()
		if len(masks) == 0 {
			t.Fatalf("nothing was masked")
		}
		for _, m := range masks {
			if len(m) < 32 || strings.HasSuffix(m, ":") || strings.HasPrefix(m, "- ") {
				t.Errorf("generic line masked: %q", m)
			}
		}
	})
	t.Run("status says the keep label is ignored", func(t *testing.T) {
		holds(t, "status with an ignored keep label", h.answered(ctx, t, repo, 1, "alice", "/poc status", "poc/keep"),
			"present but ignored", "`trudy`")
	})
	t.Run("user with only ecdsa and sk keys is told which types work", func(t *testing.T) {
		body := h.answered(ctx, t, repo, 1, "erin", "/poc kubeconfig")
		if strings.Contains(body, "has no public SSH key") || !strings.Contains(body, "ecdsa-sha2-nistp256") ||
			!strings.Contains(body, "sk-ssh-ed25519@openssh.com") || !strings.Contains(body, "ssh-ed25519") {
			t.Errorf("reply does not name the unusable and the usable key types:\n%s", body)
		}
	})
	t.Run("login renamed and re-registered while up runs", func(t *testing.T) {
		mallPub, mallID := sshUser(t)
		ev := h.comment(repo, 2, false, "alice", "/poc up --ttl 1h")
		// Once the bot has authorized alice and opened the status comment, alice renames her
		// account and mallory registers the freed login "alice" with her own key.
		gh.OnRequest(func(r ghsim.Request) bool {
			return r.Method == "POST" && strings.HasSuffix(r.Path, "/issues/2/comments")
		}, func() {
			gh.RenameUser("alice", "alice-renamed")
			gh.AddUserKey("alice", mallPub)
		})
		out, err := h.handle(ctx, ev)
		if err != nil || !out.OK {
			t.Fatalf("outcome %+v, err %v", out, err)
		}
		if gh.UserID("alice") == ev.SenderID || gh.UserID("alice-renamed") != ev.SenderID {
			t.Fatalf("the stand-in did not rename: alice=%d alice-renamed=%d event=%d", gh.UserID("alice"), gh.UserID("alice-renamed"), ev.SenderID)
		}
		for _, c := range gh.Comments(repo, 2) {
			if m := curlRE.FindStringSubmatch(c.Body); m != nil {
				t.Errorf("a kubeconfig link was posted after the rename (mallory can open it: %v)", mallID != nil)
			}
		}
		own := ownComments(h, repo, 2)
		var said bool
		for _, c := range own {
			said = said || strings.Contains(c.Body, "is now `alice-renamed`")
		}
		if !said {
			t.Errorf("no comment says the account was renamed:\n%s", own[0].Body)
		}
	})
	scanSecrets(t, h)
}
