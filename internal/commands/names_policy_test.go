package commands

import (
	"strconv"
	"strings"
	"testing"
)

func TestClusterName(t *testing.T) {
	long := strings.Repeat("very-long-repository-name-", 4)
	tests := []struct {
		owner, repo string
		n           int
		want        string // exact, or "" to check only the shape
		wantPrefix  string
	}{
		{"acme", "shop", 42, "acme-shop-42", ""},
		{"Acme", "Shop", 42, "acme-shop-42", ""}, // GitHub names are case-insensitive
		{"my-org", "my-repo", 7, "my-org-my-repo-7", ""},
		{"acme", "my.app", 1, "", "acme-my-app-"}, // lossy: hash added
		{"acme", "my_app", 1, "", "acme-my-app-"},
		{"acme", "my--app", 1, "", "acme-my-app-"},
		{"ünï", "çødé", 3, "", "n-d-"},
		{"acme", long, 123456, "", "acme-very-long-repository-"},
		{"", "", 5, "", "repo-"},
	}
	for _, tt := range tests {
		got := ClusterName(tt.owner, tt.repo, tt.n)
		if err := ValidClusterName(got); err != nil {
			t.Errorf("ClusterName(%q,%q,%d) = %q, invalid: %v", tt.owner, tt.repo, tt.n, got, err)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("ClusterName(%q,%q,%d) = %q, want %q", tt.owner, tt.repo, tt.n, got, tt.want)
		}
		if tt.wantPrefix != "" && !strings.HasPrefix(got, tt.wantPrefix) {
			t.Errorf("ClusterName(%q,%q,%d) = %q, want prefix %q", tt.owner, tt.repo, tt.n, got, tt.wantPrefix)
		}
		if len(got) > MaxClusterName {
			t.Errorf("ClusterName(%q,%q,%d) = %q: %d > %d", tt.owner, tt.repo, tt.n, got, len(got), MaxClusterName)
		}
		if !strings.HasSuffix(got, "-"+strconv.Itoa(tt.n)) {
			t.Errorf("ClusterName(%q,%q,%d) = %q: the issue number must stay visible at the end", tt.owner, tt.repo, tt.n, got)
		}
	}
}

func TestClusterNameCollisions(t *testing.T) {
	// Pairs that a plain translation would merge must get different names.
	distinct := [][2][3]string{
		{{"acme", "my.app", "1"}, {"acme", "my-app", "1"}},
		{{"acme", "my_app", "1"}, {"acme", "my.app", "1"}},
		{{"acme", "a--b", "1"}, {"acme", "a-b", "1"}},
		{{"acme", strings.Repeat("x", 60) + "1", "9"}, {"acme", strings.Repeat("x", 60) + "2", "9"}}, // same cut prefix
		{{"acme", "shop", "1"}, {"acme", "shop", "11"}},
	}
	for _, p := range distinct {
		a := ClusterName(p[0][0], p[0][1], atoi(p[0][2]))
		b := ClusterName(p[1][0], p[1][1], atoi(p[1][2]))
		if a == b {
			t.Errorf("%v and %v both named %q", p[0], p[1], a)
		}
	}
	// The one documented ambiguity: the owner/repo boundary.
	if a, b := ClusterName("a-b", "c", 1), ClusterName("a", "b-c", 1); a != b {
		t.Errorf("expected the documented boundary ambiguity, got %q and %q (update the doc if fixed)", a, b)
	}
	// Many long names in one owner stay unique.
	seen := map[string]string{}
	for i := range 2000 {
		repo := strings.Repeat("service-", 8) + strconv.Itoa(i)
		n := ClusterName("acme", repo, 1)
		if prev, ok := seen[n]; ok {
			t.Fatalf("%q and %q collide on %q", prev, repo, n)
		}
		seen[n] = repo
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func TestValidClusterName(t *testing.T) {
	for _, ok := range []string{"acme-shop-42", "a", "x1", strings.Repeat("a", MaxClusterName)} {
		if err := ValidClusterName(ok); err != nil {
			t.Errorf("ValidClusterName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Acme-shop-1", "acme_shop", "-acme", "acme-", "a--b", "acme shop", strings.Repeat("a", MaxClusterName+1), "acmé"} {
		if err := ValidClusterName(bad); err == nil {
			t.Errorf("ValidClusterName(%q) = nil, want an error", bad)
		}
	}
}

func TestPolicy(t *testing.T) {
	need := map[Verb]Permission{
		VerbUp: PermWrite, VerbDown: PermWrite, VerbExtend: PermWrite, VerbKubeconfig: PermWrite,
		VerbCost: PermRead, VerbStatus: PermRead, VerbHelp: PermRead, Verb("nuke"): PermAdmin,
	}
	for v, want := range need {
		if got := Required(v); got != want {
			t.Errorf("Required(%q) = %q, want %q", v, got, want)
		}
	}
	tests := []struct {
		have string
		need Permission
		ok   bool
	}{
		{"admin", PermWrite, true},
		{"maintain", PermWrite, true},
		{"write", PermWrite, true},
		{"push", PermWrite, true}, // legacy name
		{"WRITE", PermWrite, true},
		{"triage", PermWrite, false},
		{"read", PermWrite, false},
		{"none", PermWrite, false},
		{"", PermWrite, false},
		{"superuser", PermWrite, false},
		{"triage", PermRead, true},
		{"read", PermRead, true},
		{"pull", PermRead, true},
		{"none", PermRead, false},
		{"admin", Permission("bogus"), false}, // unknown requirement fails closed
		{"none", PermNone, true},
	}
	for _, tt := range tests {
		if got := Allowed(tt.have, tt.need); got != tt.ok {
			t.Errorf("Allowed(%q, %q) = %v, want %v", tt.have, tt.need, got, tt.ok)
		}
	}
	r := RefusalReply("octo-cat", VerbUp, "read")
	for _, want := range []string{"@octo-cat", "`/poc up`", "**write**", "you have **read**", "Nothing was run"} {
		if !strings.Contains(r, want) {
			t.Errorf("refusal lacks %q:\n%s", want, r)
		}
	}
	r = RefusalReply("<b>x</b>", VerbDown, "<script>")
	if strings.Contains(r, "<") {
		t.Errorf("refusal echoes raw HTML:\n%s", r)
	}
}

// TestWakeAndKubeconfigPolicy: on a cluster paused inside its pause window, only a verb that uses
// the cluster, from a user who may resume it, wakes it (issue 36: a read user's `/poc status`
// resumed the cluster as that user and got the admin kubeconfig); a verb that hands out the
// kubeconfig needs write. Every verb at every permission level.
func TestWakeAndKubeconfigPolicy(t *testing.T) {
	perms := []string{"", "none", "read", "pull", "triage", "write", "push", "maintain", "admin", "superuser"}
	uses := map[Verb]bool{VerbUp: true, VerbExtend: true, VerbKubeconfig: true}
	for _, v := range append(append([]Verb{}, Verbs...), Verb("nuke")) {
		for _, p := range perms {
			want := uses[v] && Allowed(p, PermWrite)
			if got := Wakes(v, p); got != want {
				t.Errorf("Wakes(%q, %q) = %v, want %v", v, p, got, want)
			}
			if Wakes(v, p) && !Allowed(p, Required(VerbResume)) {
				t.Errorf("Wakes(%q, %q): a user who may not resume wakes the cluster", v, p)
			}
		}
		if IssuesKubeconfig(v) && Required(v) != PermWrite {
			t.Errorf("%q hands out the kubeconfig but needs only %q", v, Required(v))
		}
	}
	for _, v := range []Verb{VerbStatus, VerbCost, VerbHelp, VerbDown, VerbPause} {
		if IssuesKubeconfig(v) {
			t.Errorf("%q must never hand out a kubeconfig", v)
		}
	}
	for _, v := range []Verb{VerbUp, VerbResume, VerbKubeconfig} {
		if !IssuesKubeconfig(v) {
			t.Errorf("%q hands out the kubeconfig: the policy must say so", v)
		}
	}
}
