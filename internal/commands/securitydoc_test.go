package commands

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSecurityTableIsThePolicy holds SECURITY.md's "What each role can do" table to the policy:
// every verb has its row, and each cell is what Allowed(role, Required(verb)) and Wakes(verb, role)
// decide; the last column is IssuesKubeconfig; the label's row is KeepVouched. A change of policy
// that the page does not follow (or the reverse) fails here.
func TestSecurityTableIsThePolicy(t *testing.T) {
	b, err := os.ReadFile("../../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{"none", "read", "triage", "write", "maintain", "admin"}
	header := "| command | " + strings.Join(roles, " | ") + " | kubeconfig in the reply |"
	text := string(b)
	i := strings.Index(text, header)
	if i < 0 {
		t.Fatalf("SECURITY.md has no table headed %q", header)
	}
	lines := strings.Split(text[i:], "\n")[2:] // past the header and its rule
	seen := map[Verb]bool{}
	keep := false
	for _, line := range lines {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if len(cells) != len(roles)+2 {
			t.Fatalf("row %q has %d cells, want %d", line, len(cells), len(roles)+2)
		}
		what, kube := cells[0], cells[len(cells)-1]
		if strings.HasPrefix(what, "the `poc/keep` label") {
			keep = true
			for j, role := range roles {
				if want := mark(KeepVouched("someone", role) == nil, false); cells[j+1] != want {
					t.Errorf("the label added by a %s user: the page says %q, the policy %q", role, cells[j+1], want)
				}
			}
			continue
		}
		v := Verb(strings.TrimSuffix(strings.TrimPrefix(what, "`/poc "), "`"))
		if !slices.Contains(Verbs, v) || seen[v] {
			t.Errorf("row %q: not a verb of the grammar, or a second row for it", what)
			continue
		}
		seen[v] = true
		for j, role := range roles {
			if want := mark(Allowed(role, Required(v)), Wakes(v, role)); cells[j+1] != want {
				t.Errorf("/poc %s by a %s user: the page says %q, the policy %q", v, role, cells[j+1], want)
			}
		}
		if want := map[bool]string{true: "yes", false: "no"}[IssuesKubeconfig(v)]; kube != want {
			t.Errorf("/poc %s hands out a kubeconfig: the page says %q, the policy %q", v, kube, want)
		}
	}
	for _, v := range Verbs {
		if !seen[v] {
			t.Errorf("SECURITY.md's table has no row for /poc %s", v)
		}
	}
	if !keep {
		t.Error("SECURITY.md's table has no row for the poc/keep label")
	}
}

func mark(allowed, wakes bool) string {
	switch {
	case !allowed:
		return "✗"
	case wakes:
		return "✓ wakes"
	}
	return "✓"
}
