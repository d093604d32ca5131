package github

import (
	"errors"
	"strings"
	"testing"

	simgh "github.com/pocbot/pocbot/internal/sim/github"
)

// TestStickyIgnoresForeignRememberedComment: a status comment id that points at another
// author's comment (a tampered or stale id) is neither read for its serial nor edited; a new
// status comment is started (issue 11 hole 6).
func TestStickyIgnoresForeignRememberedComment(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	n := w.sim.AddIssue(testRepo, simgh.Issue{})
	foreign := w.sim.AddComment(testRepo, n, "spoofer[bot]", marker+"\nnewest run: ready")
	self, err := c.SelfLogin(ctx)
	if err != nil || self != w.sim.BotLogin() {
		t.Fatalf("SelfLogin = %q, %v; want %q", self, err, w.sim.BotLogin())
	}
	st := NewSticky(c, n, marker, 0).WithCommentID(foreign).
		WithOverwriteCheck(func(existing string) bool { return !strings.Contains(existing, "newest run") }).
		WithOwner(func(cm Comment) bool { return cm.AuthorIsBot && strings.EqualFold(cm.Author, self) })
	if err := st.Update(ctx, "this run: provisioning"); err != nil {
		t.Fatalf("Update: %v (a foreign comment must not supersede the bot)", err)
	}
	if st.ID() == foreign {
		t.Fatalf("the bot edited the foreign comment %d", foreign)
	}
	for _, cm := range w.sim.Comments(testRepo, n) {
		if cm.ID == foreign && cm.Edits != 0 {
			t.Errorf("foreign comment edited %d times", cm.Edits)
		}
		if cm.ID == st.ID() && cm.Author != w.sim.BotLogin() {
			t.Errorf("new status comment by %s", cm.Author)
		}
	}
}

// TestIdentityLookups: id ↔ login through a rename and a re-registration, and who added a label.
func TestIdentityLookups(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	id := w.sim.UserID("walt")
	if got, err := c.UserLogin(ctx, id); err != nil || got != "walt" {
		t.Fatalf("UserLogin(%d) = %q, %v", id, got, err)
	}
	w.sim.RenameUser("walt", "walter")
	w.sim.AddUser("walt") // someone else takes the freed login
	if got, err := c.UserLogin(ctx, id); err != nil || got != "walter" {
		t.Errorf("after the rename, UserLogin(%d) = %q, %v; want walter", id, got, err)
	}
	if got, err := c.UserID(ctx, "walt"); err != nil || got == id || got == 0 {
		t.Errorf("UserID(walt) = %d, %v; want the new account's id, not %d", got, err, id)
	}
	if _, err := c.UserLogin(ctx, 999999999); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
	if p, err := c.Permission(ctx, "walter"); err != nil || p != "write" {
		t.Errorf("the role follows the account: %q, %v", p, err)
	}
	n := w.sim.AddIssue(testRepo, simgh.Issue{Author: "rita"})
	if _, ok, err := c.LabelActor(ctx, n, "poc/keep"); ok || err != nil {
		t.Errorf("no label yet: ok=%v err=%v", ok, err)
	}
	w.sim.LabelIssue(testRepo, n, "tria", "poc/keep")
	w.sim.SetLabels(testRepo, n)                     // removed by the owner
	w.sim.LabelIssue(testRepo, n, "mia", "poc/keep") // added again by a maintainer
	if a, ok, err := c.LabelActor(ctx, n, "POC/keep"); err != nil || !ok || a != "mia" {
		t.Errorf("LabelActor = %q %v %v, want the last adder mia", a, ok, err)
	}
	if err := c.AddLabel(ctx, n, "other"); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := c.LabelActor(ctx, n, "other"); err != nil || !ok || a != w.sim.BotLogin() {
		t.Errorf("a label added through the API is by the token's identity: %q %v %v", a, ok, err)
	}
}
