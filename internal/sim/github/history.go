package github

import (
	"maps"
	"net/http"
	"strconv"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// A branch's history: each change of its files (SetFile, PUT …/contents, a merge into it) is one
// commit, oldest first; the first change also keeps the branch as it was before, its first
// commit. GET …/commits lists it newest first, and GET …/compare/{base}...{head} of two of its
// commits answers from it: the older one is the merge base (the history is linear). A commit's
// sha is its tree's hash, as a branch head's is here: two commits of one tree share it, and the
// newer one answers for it.

type snapshot struct {
	sha, message, author string
	date                 time.Time
	files                map[string][]byte
}

// noteCommitLocked records that branch of r changed from before to its files now. Caller holds
// s.mu.
func (s *Server) noteCommitLocked(r *repo, branch string, before map[string][]byte, message, author string) {
	a := s.adminOf(r)
	now := s.now().UTC()
	if a.history == nil {
		a.history = map[string][]snapshot{}
	}
	if len(a.history[branch]) == 0 {
		a.history[branch] = []snapshot{{sha: treeSHA(before), message: "Initial commit", author: author, date: now, files: maps.Clone(before)}}
	}
	files := r.files[branch]
	a.branchSHA[branch] = treeSHA(files)
	a.history[branch] = append(a.history[branch], snapshot{sha: a.branchSHA[branch], message: message, author: author, date: now, files: maps.Clone(files)})
}

// historyOf is branch's history, oldest first: one commit of its files as they are when it never
// changed.
func (s *Server) historyOf(r *repo, branch string) []snapshot {
	a := s.adminOf(r)
	if h := a.history[branch]; len(h) > 0 {
		return h
	}
	return []snapshot{{sha: treeSHA(r.files[branch]), message: "Initial commit", date: s.now().UTC(), files: r.files[branch]}}
}

// listCommits serves GET /repos/{o}/{r}/commits (sha: a branch, default the default branch;
// per_page default 30, at most 100), newest first.
func (s *Server) listCommits(c *call, r *repo) {
	q := c.r.URL.Query()
	branch := q.Get("sha")
	if branch == "" {
		branch = r.defaultBranch
	}
	if _, ok := r.files[branch]; !ok && branch != r.defaultBranch {
		c.fail(http.StatusNotFound, "No commit found for SHA: "+branch)
		return
	}
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	h := s.historyOf(r, branch)
	out := []*gh.RepositoryCommit{}
	for i := len(h) - 1 - (page-1)*perPage; i >= 0 && len(out) < perPage; i-- {
		out = append(out, repositoryCommit(r, h, i))
	}
	c.json(http.StatusOK, out)
}

func repositoryCommit(r *repo, h []snapshot, i int) *gh.RepositoryCommit {
	cm := h[i]
	date := gh.Timestamp{Time: cm.date}
	var parents []*gh.Commit
	if i > 0 {
		parents = []*gh.Commit{{SHA: gh.Ptr(h[i-1].sha), URL: gh.Ptr("https://api.github.com/repos/" + r.fullName() + "/commits/" + h[i-1].sha)}}
	}
	return &gh.RepositoryCommit{SHA: gh.Ptr(cm.sha), Author: &gh.User{Login: gh.Ptr(cm.author)}, Parents: parents,
		HTMLURL: gh.Ptr("https://github.com/" + r.fullName() + "/commit/" + cm.sha),
		URL:     gh.Ptr("https://api.github.com/repos/" + r.fullName() + "/commits/" + cm.sha),
		Commit: &gh.Commit{SHA: gh.Ptr(cm.sha), Message: gh.Ptr(cm.message),
			Author: &gh.CommitAuthor{Name: gh.Ptr(cm.author), Date: &date}, Committer: &gh.CommitAuthor{Name: gh.Ptr(cm.author), Date: &date}}}
}

// compareCommits answers a compare of two commits of one branch's history (false when base and
// head are not both in one): the older is the merge base; files are head's against it (against
// base itself under compare-base=base-tip), commits those after base up to head.
func (s *Server) compareCommits(c *call, r *repo, base, head string) bool {
	a := s.adminOf(r)
	for _, h := range a.history {
		bi, hi := lastIndex(h, base), lastIndex(h, head)
		if bi < 0 || hi < 0 {
			continue
		}
		mb := min(bi, hi)
		from := h[mb].files
		if s.compareBaseTip {
			from = h[bi].files
		}
		var commits []*gh.RepositoryCommit
		for i := bi + 1; i <= hi; i++ {
			commits = append(commits, repositoryCommit(r, h, i))
		}
		if commits == nil {
			commits = []*gh.RepositoryCommit{}
		}
		ahead, behind := max(hi-bi, 0), max(bi-hi, 0)
		status := "identical"
		switch {
		case ahead > 0:
			status = "ahead"
		case behind > 0:
			status = "behind"
		}
		basehead := base + "..." + head
		web, api := "https://github.com/"+r.fullName(), "https://api.github.com/repos/"+r.fullName()
		c.json(http.StatusOK, &gh.CommitsComparison{
			BaseCommit: repositoryCommit(r, h, bi), MergeBaseCommit: repositoryCommit(r, h, mb),
			Status: gh.Ptr(status), AheadBy: gh.Ptr(ahead), BehindBy: gh.Ptr(behind), TotalCommits: gh.Ptr(len(commits)),
			Commits: commits, Files: diffFiles(r, head, from, h[hi].files),
			HTMLURL: gh.Ptr(web + "/compare/" + basehead), PermalinkURL: gh.Ptr(web + "/compare/" + h[mb].sha + "..." + head),
			DiffURL: gh.Ptr(web + "/compare/" + basehead + ".diff"), PatchURL: gh.Ptr(web + "/compare/" + basehead + ".patch"),
			URL: gh.Ptr(api + "/compare/" + basehead),
		})
		return true
	}
	return false
}

func lastIndex(h []snapshot, sha string) int {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].sha == sha {
			return i
		}
	}
	return -1
}
