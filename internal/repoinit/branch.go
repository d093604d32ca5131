package repoinit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/deploy"
)

// init's pull request comes from a branch it makes from the default branch (Branch). A writer can
// make that branch first, or push to it, and whatever it holds would ride along with init's "merge
// it". So init reuses the branch only when everything a merge of it would bring is what init
// writes — its workflow (any pin, schedule or environment line: init rewrites it) and the default
// .github/poc.yml — and its open pull request only when its title and body are init's. Who
// pushed does not matter, what would be merged does; anything else is a refusal that names it.

const prTitle = "pocbot: add the /poc workflow"

// prBody is the description of init's pull request; it names nothing a rerun changes (the pin is
// in the diff, where the secrets went is in init's output), so that a rerun recognises it.
func (r *runner) prBody() string { return r.prBodyWith(r.cfg.PRWorkflow) }

// prBodyWith is the description with or without the end-to-end workflow's sentence: a rerun
// with or without --pr-workflow recognises either.
func (r *runner) prBodyWith(prWorkflow bool) string {
	e2e := ""
	if prWorkflow {
		e2e = "It also adds `" + PRWorkflowPath + "`, the pull requests' end-to-end job on their cluster: set its `env:` (manifests, namespace, test command) before merging. "
	}
	return "Adds pocbot's workflow, pinned to the Action's commit, and `.github/poc.yml` with every setting at its default.\n\n" +
		"The secrets it reads were written by `bot init`. " + e2e + "Merge, then comment `/poc up` on an issue. " +
		"`bot doctor --repo " + r.cfg.Repo + "` checks the installation."
}

// ErrForeignBranch refuses a branch or pull request of init's name holding what init did not write.
var ErrForeignBranch = errors.New("init's branch holds what init did not write")

// pullRequest proposes the workflow and the configuration unless the default branch has them.
func (r *runner) pullRequest(ctx context.Context, base string) error {
	want := map[string][]byte{
		WorkflowPath: WorkflowFile(r.cfg.ActionRef, r.rep.Target != "repository secrets", r.cfg.Cron),
		ConfigPath:   []byte(deploy.RepoConfig),
	}
	paths := []string{WorkflowPath, ConfigPath}
	if r.cfg.PRWorkflow {
		want[PRWorkflowPath] = PRWorkflowFile(r.cfg.ActionRef)
		paths = append(paths, PRWorkflowPath)
	}
	onBase := 0
	var write []string // what the branch must bring: a user's file on the base is left alone
	for _, p := range paths {
		b, _, ok, err := r.file(ctx, base, p)
		switch {
		case err != nil:
			return err
		case ok && (userOwned(p) || bytes.Equal(b, want[p])):
			onBase++ // an existing configuration is the user's: never proposed over
		default:
			write = append(write, p)
		}
	}
	if onBase == len(paths) {
		r.rep.UpToDate = true
		fmt.Fprintf(r.out, "✓ %s has the pinned workflow and .github/poc.yml\n", base)
		return nil
	}
	pr := r.openPR
	if r.cfg.DryRun {
		if pr != nil {
			fmt.Fprintf(r.out, "✓ pull request #%d is open: merge it\n", pr.GetNumber())
		} else {
			fmt.Fprintf(r.out, "+ would open a pull request from %s adding %s (uses: %s)\n", Branch, strings.Join(write, ", "), r.cfg.ActionRef)
		}
		return nil
	}
	// Bring the branch up to date (made when missing; a rerun with another --action rewrites
	// the workflow), then point at its pull request, or open it.
	if err := r.putFiles(ctx, base, write, want); err != nil {
		return err
	}
	if pr != nil {
		r.rep.PR, r.rep.PRURL = pr.GetNumber(), pr.GetHTMLURL()
		fmt.Fprintf(r.out, "✓ pull request #%d adds the workflow: merge it (%s)\n", r.rep.PR, r.rep.PRURL)
		return nil
	}
	pr, _, err := r.c.PullRequests.Create(ctx, r.owner, r.name, &gh.NewPullRequest{Title: gh.Ptr(prTitle), Head: gh.Ptr(Branch), Base: gh.Ptr(base), Body: gh.Ptr(r.prBody())})
	if err != nil {
		return fmt.Errorf("init: open the pull request from %s to %s: %w (rerun: the branch is kept)", Branch, base, err)
	}
	r.rep.Changes++
	r.rep.PR, r.rep.PRURL = pr.GetNumber(), pr.GetHTMLURL()
	fmt.Fprintf(r.out, "+ pull request #%d adds the workflow and .github/poc.yml: merge it, then comment /poc up on an issue (%s)\n", pr.GetNumber(), pr.GetHTMLURL())
	return nil
}

// checkBranch reads Branch and its open pull request, and refuses (ErrForeignBranch, naming what
// it found) when either holds what init does not write. It returns the open pull request, if any.
func (r *runner) checkBranch(ctx context.Context, base string) (*gh.PullRequest, error) {
	var foreign, authors []string
	if _, resp, err := r.c.Git.GetRef(ctx, r.owner, r.name, "heads/"+Branch); err == nil {
		cmp, _, err := r.c.Repositories.CompareCommits(ctx, r.owner, r.name, base, Branch, &gh.ListOptions{PerPage: 100})
		if err != nil {
			return nil, fmt.Errorf("init: compare %s with %s: %w", Branch, base, err)
		}
		for _, f := range cmp.Files {
			if why := r.notInits(ctx, f); why != "" {
				foreign = append(foreign, why)
			}
		}
		if len(cmp.Files) >= 300 { // GitHub lists at most 300 files: what it leaves out is unknown
			foreign = append(foreign, "more files than GitHub lists")
		}
		for _, c := range cmp.Commits {
			if l := c.GetAuthor().GetLogin(); l != "" && !slices.Contains(authors, l) {
				authors = append(authors, l)
			}
		}
	} else if resp == nil || resp.StatusCode != http.StatusNotFound {
		return nil, fmt.Errorf("init: read branch %s: %w", Branch, err)
	}
	prs, _, err := r.c.PullRequests.List(ctx, r.owner, r.name, &gh.PullRequestListOptions{State: "open", Head: r.owner + ":" + Branch})
	if err != nil {
		return nil, fmt.Errorf("init: list pull requests of %s: %w", r.cfg.Repo, err)
	}
	var open *gh.PullRequest
	for _, pr := range prs {
		if pr.GetTitle() != prTitle || (pr.GetBody() != r.prBodyWith(false) && pr.GetBody() != r.prBodyWith(true)) || pr.GetBase().GetRef() != base {
			foreign = append(foreign, fmt.Sprintf("pull request #%d (by %s: its title, description or base is not init's)", pr.GetNumber(), pr.GetUser().GetLogin()))
			continue
		}
		open = pr
	}
	if len(foreign) == 0 {
		return open, nil
	}
	by := ""
	if len(authors) > 0 {
		by = " (commits by " + strings.Join(authors, ", ") + ")"
	}
	web := strings.TrimRight(r.cfg.WebURL, "/")
	return nil, fmt.Errorf("init: %w: the branch %s%s holds %s. init never proposes what it did not write, and a merge of it would bring that too: "+
		"look at it (%s/%s/compare/%s...%s), find who pushed it, then delete the branch (git push origin --delete %s, which closes its pull request) and rerun",
		ErrForeignBranch, Branch, by, strings.Join(foreign, "; "), web, r.cfg.Repo, base, Branch, Branch)
}

// notInits says why a file a merge of Branch would change is not init's ("" when it is): init
// writes its workflow (ParseWorkflow), the end-to-end workflow (ParsePRWorkflow) and the default
// configuration, and nothing else.
func (r *runner) notInits(ctx context.Context, f *gh.CommitFile) string {
	p, st := f.GetFilename(), f.GetStatus()
	if (p != WorkflowPath && p != ConfigPath && p != PRWorkflowPath) || (st != "added" && st != "modified") {
		return fmt.Sprintf("%s (%s)", p, st)
	}
	b, _, ok, err := r.file(ctx, Branch, p)
	switch {
	case err != nil || !ok:
		return fmt.Sprintf("%s (unreadable)", p)
	case p == ConfigPath && string(b) != deploy.RepoConfig:
		return p + " (not the default configuration init writes)"
	case p == WorkflowPath:
		if _, ok := ParseWorkflow(b); !ok {
			return p + " (not the workflow init writes)"
		}
	case p == PRWorkflowPath:
		if _, ok := ParsePRWorkflow(b); !ok {
			return p + " (not the end-to-end workflow init writes)"
		}
	}
	return ""
}

// userOwned are the files a user edits once they are on the default branch (the configuration,
// the end-to-end workflow's env:): init never proposes them over what is there.
func userOwned(p string) bool { return p == ConfigPath || p == PRWorkflowPath }

// putFiles writes the files to the init branch (created from base when missing).
func (r *runner) putFiles(ctx context.Context, base string, paths []string, want map[string][]byte) error {
	if _, resp, err := r.c.Git.GetRef(ctx, r.owner, r.name, "heads/"+Branch); err != nil {
		if resp == nil || resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("init: read branch %s: %w", Branch, err)
		}
		head, _, err := r.c.Git.GetRef(ctx, r.owner, r.name, "heads/"+base)
		if err != nil {
			return fmt.Errorf("init: read branch %s: %w", base, err)
		}
		if _, _, err := r.c.Git.CreateRef(ctx, r.owner, r.name, gh.CreateRef{Ref: "refs/heads/" + Branch, SHA: head.GetObject().GetSHA()}); err != nil {
			return fmt.Errorf("init: create branch %s: %w", Branch, err)
		}
		r.rep.Changes++
	}
	for _, p := range paths {
		cur, sha, ok, err := r.file(ctx, Branch, p)
		if err != nil {
			return err
		}
		if ok && (p == ConfigPath || bytes.Equal(cur, want[p])) {
			continue
		}
		opts := &gh.RepositoryContentFileOptions{Message: gh.Ptr("pocbot: add " + p), Content: want[p], Branch: gh.Ptr(Branch)}
		if ok {
			opts.SHA = gh.Ptr(sha)
		}
		if _, _, err := r.c.Repositories.CreateFile(ctx, r.owner, r.name, p, opts); err != nil {
			return fmt.Errorf("init: write %s on branch %s: %w (rerun to finish)", p, Branch, err)
		}
		r.rep.Changes++
	}
	return nil
}

// file reads a file of a branch: content, blob sha, whether it exists.
func (r *runner) file(ctx context.Context, branch, path string) ([]byte, string, bool, error) {
	fc, _, resp, err := r.c.Repositories.GetContents(ctx, r.owner, r.name, path, &gh.RepositoryContentGetOptions{Ref: branch})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, "", false, nil
		}
		return nil, "", false, fmt.Errorf("init: read %s on %s: %w", path, branch, err)
	}
	if fc == nil {
		return nil, "", false, fmt.Errorf("init: %s on %s is a directory", path, branch)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, "", false, fmt.Errorf("init: decode %s on %s: %w", path, branch, err)
	}
	return []byte(s), fc.GetSHA(), true, nil
}
