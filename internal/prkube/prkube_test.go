package prkube

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/kubecert"
	"github.com/pocbot/pocbot/internal/lifecycle"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func testRequest(t testing.TB) Request {
	t.Helper()
	k, err := kubecert.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return Request{V: Version, PR: 7, RunID: 900, RunAttempt: 2, HeadSHA: sha, Key: base64.StdEncoding.EncodeToString(der),
		Expires: 3600, Nonce: "0123456789abcdef0123456789abcdef", Token: "eyJ.x.y"}
}

// good is the facts of an authentic request that Admit lets through; each row changes one fact.
func good(r Request) Facts {
	return Facts{Repo: "acme/shop", RepoID: 42, Req: r,
		Token:      Token{Repository: "acme/shop", RepositoryID: 42, RunID: r.RunID, RunAttempt: r.RunAttempt, EventName: "pull_request", Ref: "refs/pull/7/merge"},
		Pull:       Pull{Found: true, Open: true, HeadSHA: sha},
		Run:        Run{Found: true, Event: "pull_request", Status: "in_progress", HeadSHA: sha, HeadRepo: "acme/shop", Attempt: 2, Triggerer: "ada"},
		Permission: "write"}
}

func TestAdmit(t *testing.T) {
	r := testRequest(t)
	for _, tc := range []struct {
		name   string
		change func(*Facts)
		drop   bool
		refuse string // a word of the reason; "" with drop false: admitted
	}{
		{name: "authentic", change: func(*Facts) {}},
		{name: "maintain may", change: func(f *Facts) { f.Permission = "maintain" }},
		{name: "the legacy name of write", change: func(f *Facts) { f.Permission = "push" }},
		{name: "head ref of the pull request", change: func(f *Facts) { f.Token.Ref = "refs/pull/7/head" }},
		{name: "token does not verify", change: func(f *Facts) { f.Token.Err = errors.New("bad signature") }, drop: true},
		{name: "token of another repository", change: func(f *Facts) { f.Token.Repository = "evil/shop" }, drop: true},
		{name: "token of a repository renamed over", change: func(f *Facts) { f.Token.RepositoryID = 43 }, drop: true},
		{name: "token of another run", change: func(f *Facts) { f.Token.RunID = 901 }, drop: true},
		{name: "token of another attempt", change: func(f *Facts) { f.Token.RunAttempt = 1 }, drop: true},
		{name: "pull_request_target", change: func(f *Facts) { f.Token.EventName = "pull_request_target" }, refuse: "pwn request"},
		{name: "push run", change: func(f *Facts) { f.Token.EventName = "push" }, refuse: "only a pull_request run"},
		{name: "run of another pull request", change: func(f *Facts) { f.Token.Ref = "refs/pull/8/merge" }, refuse: "not of pull request #7"},
		{name: "no such pull request", change: func(f *Facts) { f.Pull.Found = false }, refuse: "does not exist"},
		{name: "closed pull request", change: func(f *Facts) { f.Pull.Open = false }, refuse: "closed"},
		{name: "fork", change: func(f *Facts) { f.Pull.FromFork = true }, refuse: "fork"},
		{name: "run not found", change: func(f *Facts) { f.Run.Found = false }, refuse: "does not exist"},
		{name: "run of another event", change: func(f *Facts) { f.Run.Event = "pull_request_target" }, refuse: "not pull_request"},
		{name: "run completed", change: func(f *Facts) { f.Run.Status = "completed" }, refuse: "live run only"},
		{name: "run re-run since", change: func(f *Facts) { f.Run.Attempt = 3 }, refuse: "attempt 3"},
		{name: "run of a fork's code", change: func(f *Facts) { f.Run.HeadRepo = "mallory/shop" }, refuse: "a fork"},
		{name: "pull request moved on", change: func(f *Facts) { f.Pull.HeadSHA = strings.Repeat("b", 40) }, refuse: "older commit"},
		{name: "request of an older commit", change: func(f *Facts) { f.Req.HeadSHA = strings.Repeat("c", 40) }, refuse: "older commit"},
		{name: "triage only", change: func(f *Facts) { f.Permission = "triage" }, refuse: "needs write"},
		{name: "read only, legacy name", change: func(f *Facts) { f.Permission = "pull" }, refuse: "needs write"},
		{name: "unknown permission", change: func(f *Facts) { f.Permission = "" }, refuse: "no permission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good(r)
			tc.change(&f)
			v := Admit(f)
			switch {
			case tc.drop:
				if !v.Drop || v.Refuse {
					t.Fatalf("Admit = %+v, want a drop", v)
				}
			case tc.refuse != "":
				if v.Drop || !v.Refuse || !strings.Contains(v.Why, tc.refuse) {
					t.Fatalf("Admit = %+v, want a refusal saying %q", v, tc.refuse)
				}
			default:
				if v.Drop || v.Refuse {
					t.Fatalf("Admit = %+v, want it admitted", v)
				}
			}
		})
	}
}

func TestPlan(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		c        *Cluster
		noCreate string
		want     Action
		says     string // a word of the refusal
	}{
		{"ready", &Cluster{Phase: lifecycle.PhaseReady}, "", Issue, ""},
		{"ready, expires later", &Cluster{Phase: lifecycle.PhaseReady, Expires: now.Add(time.Minute)}, "", Issue, ""},
		{"ready but expired", &Cluster{Phase: lifecycle.PhaseReady, Expires: now.Add(-time.Minute)}, "", Refuse, "expired at 2026-05-01 11:59 UTC"},
		{"expiring this instant", &Cluster{Phase: lifecycle.PhaseReady, Expires: now}, "", Refuse, "/poc extend"},
		{"being made", &Cluster{Phase: lifecycle.PhaseProvisioning}, "", Wait, ""},
		{"resuming", &Cluster{Phase: lifecycle.PhaseResuming}, "", Wait, ""},
		{"none, settings make one", nil, "", Create, ""},
		{"none, settings do not", nil, "add the label poc", Refuse, "add the label poc"},
		{"paused", &Cluster{Phase: lifecycle.PhasePaused}, "", Refuse, "/poc resume"},
		{"failed", &Cluster{Phase: lifecycle.PhaseFailed}, "", Refuse, "/poc up"},
		{"torn down", &Cluster{Phase: lifecycle.PhaseDestroying}, "", Refuse, "torn down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Plan(tc.c, tc.noCreate, now)
			if got != tc.want || (got == Refuse) != (why != "") {
				t.Fatalf("Plan = %s %q, want %s", got, why, tc.want)
			}
			if !strings.Contains(why, tc.says) {
				t.Errorf("the refusal %q does not say %q", why, tc.says)
			}
		})
	}
}

// Every field of a request but its token changes its audience: a token cannot be moved to
// another key, run, attempt, commit, lifetime or nonce.
func TestAudienceBindsEveryField(t *testing.T) {
	r := testRequest(t)
	base := Audience(r)
	other := testRequest(t)
	for name, change := range map[string]func(*Request){
		"pr": func(r *Request) { r.PR++ }, "run": func(r *Request) { r.RunID++ }, "attempt": func(r *Request) { r.RunAttempt++ },
		"sha": func(r *Request) { r.HeadSHA = strings.Repeat("d", 40) }, "key": func(r *Request) { r.Key = other.Key },
		"expires": func(r *Request) { r.Expires++ }, "nonce": func(r *Request) { r.Nonce = strings.Repeat("e", 32) },
	} {
		c := r
		change(&c)
		if Audience(c) == base {
			t.Errorf("changing %s leaves the audience as it was", name)
		}
	}
	c := r
	c.Token = "another"
	if Audience(c) != base {
		t.Error("the token changes its own audience")
	}
}

func TestDecode(t *testing.T) {
	r := testRequest(t)
	raw, _ := json.Marshal(r)
	got, err := Decode(raw)
	if err != nil || got != r {
		t.Fatalf("Decode(a good request) = %+v, %v", got, err)
	}
	for name, change := range map[string]func(*Request){
		"version":   func(r *Request) { r.V = 2 },
		"no pr":     func(r *Request) { r.PR = 0 },
		"sha":       func(r *Request) { r.HeadSHA = "main" },
		"key":       func(r *Request) { r.Key = "bm90IGEga2V5" },
		"nonce":     func(r *Request) { r.Nonce = "short" },
		"no token":  func(r *Request) { r.Token = "" },
		"negative":  func(r *Request) { r.Expires = -1 },
		"uppercase": func(r *Request) { r.Nonce = strings.ToUpper(r.Nonce) + "ABCDEF" },
	} {
		c := r
		change(&c)
		raw, _ := json.Marshal(c)
		if _, err := Decode(raw); err == nil {
			t.Errorf("%s: Decode accepted %s", name, raw)
		}
	}
	if _, err := Decode([]byte(`[1,2]`)); err == nil {
		t.Error("Decode accepted an array")
	}
}

func FuzzDecode(f *testing.F) {
	r := testRequest(f)
	raw, _ := json.Marshal(r)
	f.Add(raw)
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		if _, err := r.PublicKey(); err != nil {
			t.Fatalf("Decode accepted a request whose key does not parse: %v", err)
		}
		_ = Audience(r)
	})
}

func TestAnswerRoundTrip(t *testing.T) {
	na := time.Date(2026, 5, 1, 13, 0, 0, 0, time.UTC)
	for _, a := range []Answer{
		{State: StateIssued, Cluster: "acme-shop-7", Server: "https://192.0.2.1:6443", CA: "Y2E=", Certificate: "Y2VydA==", NotAfter: na, Subject: "pocbot:pr-7:run-900.2"},
		{State: StateWorking, Cluster: "acme-shop-7", Message: "the cluster is being made (ETA 12 min)"},
		{State: StateRefused, Message: "pull request #7 is closed"},
		{State: StateFailed, Cluster: "acme-shop-7", Message: "the up failed: quota"},
	} {
		status, conclusion, title, summary, text := a.Check(900, 2)
		if title == "" || summary == "" || (status == "completed") == (conclusion == "") {
			t.Errorf("%s: status %q conclusion %q title %q", a.State, status, conclusion, title)
		}
		if strings.Contains(summary, "pocbot:answer") {
			t.Errorf("%s: the machine answer is in the summary, shown on the checks page", a.State)
		}
		got, err := ParseAnswer("something before\n" + text)
		a.V = Version
		if err != nil || got != a {
			t.Errorf("%s: ParseAnswer = %+v, %v; want %+v", a.State, got, err, a)
		}
	}
	if _, err := ParseAnswer(`<!-- pocbot:answer {"v":1,"state":"issued"} -->`); err == nil {
		t.Error("an issued answer without its certificate parsed")
	}
	if _, err := ParseAnswer(`<!-- pocbot:answer {"v":9,"state":"issued"} -->`); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("another version: %v", err)
	}
}

func TestCheckJob(t *testing.T) {
	if err := CheckJob("pull_request", 7, false, "acme/shop"); err != nil {
		t.Errorf("a pull_request job of the repository: %v", err)
	}
	for _, tc := range []struct {
		event string
		fork  bool
		says  string
	}{
		{"pull_request_target", false, "pull_request_target"},
		{"push", false, `"push"`},
		{"pull_request", true, "fork"},
	} {
		if err := CheckJob(tc.event, 7, tc.fork, "mallory/shop"); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckJob(%s, fork %v) = %v, want it to say %q", tc.event, tc.fork, err, tc.says)
		}
	}
}
