package github

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// Branches have no history in this stand-in (a branch is its files, its head sha their tree's
// hash). What `bot init` needs to tell its own branch from a planted one is what a merge would
// bring, and who pushed it: a branch made through POST …/git/refs remembers the files it was made
// from (its merge base) and every PUT …/contents on it is one commit (sha, message, author). GET
// …/compare/{base}...{head} answers from that.

type forkPoint struct {
	from    string            // the branch it was made from
	sha     string            // that branch's head then
	files   map[string][]byte // that branch's files then
	commits []commitRec       // PUT …/contents on the branch since, oldest first
}

type commitRec struct {
	sha, message, author string
	date                 time.Time
}

// compare serves GET /repos/{o}/{r}/compare/{base}...{head} for two branches: the files a merge
// of head into base would change (against head's merge base when head was made from base through
// the API, else against base's files; against base's files always under compare-base=base-tip),
// and head's commits since.
func (s *Server) compare(c *call, r *repo, basehead string) {
	base, head, ok := strings.Cut(basehead, "...")
	if _, isBranch := r.files[base]; ok && !isBranch && s.compareCommits(c, r, base, head) {
		return
	}
	baseFiles, okBase := r.files[base]
	headFiles, okHead := r.files[head]
	if !ok || !okBase && base != r.defaultBranch || !okHead && head != r.defaultBranch {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	a := s.adminOf(r)
	from, mergeBase := baseFiles, a.branchSHA[base]
	var commits []*gh.RepositoryCommit
	if f, ok := a.forks[head]; ok && f.from == base {
		from, mergeBase = f.files, f.sha
		if s.compareBaseTip {
			from = baseFiles // register compare-base=base-tip: what base gained shows as head's
		}
		for _, cm := range f.commits {
			date := gh.Timestamp{Time: cm.date}
			commits = append(commits, &gh.RepositoryCommit{SHA: gh.Ptr(cm.sha), Author: &gh.User{Login: gh.Ptr(cm.author)},
				Commit: &gh.Commit{SHA: gh.Ptr(cm.sha), Message: gh.Ptr(cm.message), Author: &gh.CommitAuthor{Name: gh.Ptr(cm.author), Date: &date}}})
		}
	}
	files := diffFiles(r, head, from, headFiles)
	status := "identical"
	switch {
	case len(commits) > 0 || len(files) > 0:
		status = "ahead"
	}
	if commits == nil {
		commits = []*gh.RepositoryCommit{}
	}
	web := "https://github.com/" + r.fullName()
	api := "https://api.github.com/repos/" + r.fullName()
	c.json(http.StatusOK, &gh.CommitsComparison{
		BaseCommit: &gh.RepositoryCommit{SHA: gh.Ptr(a.branchSHA[base])}, MergeBaseCommit: &gh.RepositoryCommit{SHA: gh.Ptr(mergeBase)},
		Status: gh.Ptr(status), AheadBy: gh.Ptr(len(commits)), BehindBy: gh.Ptr(0), TotalCommits: gh.Ptr(len(commits)),
		Commits: commits, Files: files,
		HTMLURL: gh.Ptr(web + "/compare/" + basehead), PermalinkURL: gh.Ptr(web + "/compare/" + mergeBase + "..." + a.branchSHA[head]),
		DiffURL: gh.Ptr(web + "/compare/" + basehead + ".diff"), PatchURL: gh.Ptr(web + "/compare/" + basehead + ".patch"),
		URL: gh.Ptr(api + "/compare/" + basehead),
	})
}

// diffFiles lists what differs from old to now, by path: added, removed, modified.
func diffFiles(r *repo, head string, old, now map[string][]byte) []*gh.CommitFile {
	var paths []string
	for p := range old {
		paths = append(paths, p)
	}
	for p := range now {
		if _, ok := old[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	out := []*gh.CommitFile{}
	for _, p := range paths {
		o, inOld := old[p]
		n, inNow := now[p]
		st, sha := "modified", blobSHA(n)
		switch {
		case !inOld:
			st = "added"
		case !inNow:
			st, sha = "removed", blobSHA(o)
		case string(o) == string(n):
			continue
		}
		adds, dels := strings.Count(string(n), "\n"), strings.Count(string(o), "\n")
		if st == "added" {
			dels = 0
		}
		if st == "removed" {
			adds = 0
		}
		raw := fmt.Sprintf("https://github.com/%s/raw/%s/%s", r.fullName(), head, p)
		out = append(out, &gh.CommitFile{SHA: gh.Ptr(sha), Filename: gh.Ptr(p), Status: gh.Ptr(st), Additions: gh.Ptr(adds), Deletions: gh.Ptr(dels),
			Changes: gh.Ptr(adds + dels), BlobURL: gh.Ptr(raw), RawURL: gh.Ptr(raw),
			ContentsURL: gh.Ptr(fmt.Sprintf("https://api.github.com/repos/%s/contents/%s?ref=%s", r.fullName(), p, head))})
	}
	return out
}

// dirListing is GET …/contents/{dir}: the entries right under dir on ref (files, and
// directories for deeper paths); ok is false when nothing is under it.
func dirListing(r *repo, ref, dir string) ([]*gh.RepositoryContent, bool) {
	prefix := strings.Trim(dir, "/") + "/"
	seen := map[string]bool{}
	var out []*gh.RepositoryContent
	for p, b := range r.files[ref] {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, _, deeper := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		e := &gh.RepositoryContent{Name: gh.Ptr(name), Path: gh.Ptr(prefix + name), Type: gh.Ptr("file"), Size: gh.Ptr(len(b)), SHA: gh.Ptr(blobSHA(b)),
			URL:     gh.Ptr(fmt.Sprintf("https://api.github.com/repos/%s/contents/%s%s?ref=%s", r.fullName(), prefix, name, ref)),
			HTMLURL: gh.Ptr(fmt.Sprintf("https://github.com/%s/blob/%s/%s%s", r.fullName(), ref, prefix, name))}
		if deeper {
			e.Type, e.Size, e.SHA = gh.Ptr("dir"), gh.Ptr(0), gh.Ptr(blobSHA([]byte(prefix+name)))
		} else {
			e.DownloadURL = gh.Ptr(fmt.Sprintf("https://raw.githubusercontent.com/%s/%s/%s%s", r.fullName(), ref, prefix, name))
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, len(out) > 0
}
