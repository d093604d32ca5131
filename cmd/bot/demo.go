//go:build sim

package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/syncio"
	"github.com/pocbot/pocbot/internal/sim/world"
)

func demoCommand() *command {
	var (
		factor float64
		s3     string
		keep   bool
	)
	return &command{
		name:    "demo",
		summary: "play /poc up, cost, a refused up and down against the emulated world, printing every comment",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.Setting(&factor, "demo-time-factor")
			e.Setting(&s3, "demo-s3")
			e.Bool(&keep, "keep", "", false, "keep the world's temporary directory")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			return a.demo(ctx, factor, s3, keep)
		},
	}
}

// demo is the README's first command: the whole emulated world in-process, a maintainer's
// `/poc up` with the status comment as it evolves, `/poc cost`, a read-only user's refused up
// (zero Scaleway calls), `/poc down`. Every command goes through a.handle, the code path of
// `bot handle`, with the event written to a file and the environment given by a getenv function.
func (a *app) demo(ctx context.Context, factor float64, s3 string, keep bool) error {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "pocbot-demo-")
	if err != nil {
		return err
	}
	if keep {
		a.printf("world directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	w, err := a.demoWorld(ctx, dir, factor, s3, t0)
	if err != nil {
		return err
	}
	defer w.Close()
	d, aliceID, err := a.demoSeed(w, dir)
	if err != nil {
		return err
	}
	number := d.number
	d.commands(ctx, aliceID)
	d.expiry(ctx)

	gh := w.GitHub
	d.failures = append(d.failures, leakedSecrets(gh.AllComments(), d.logs.String())...)
	a.printf("demo finished in %s; %d comments, %d reactions, %d Scaleway calls; 👀 after %s on average\n",
		time.Since(t0).Round(100*time.Millisecond), len(gh.AllComments()), len(gh.Reactions(d.repo, number)),
		w.Scaleway.CallCount(), d.eyesAverage().Round(time.Millisecond))
	if len(d.failures) > 0 {
		fmt.Fprintf(a.stderr, "demo: handler log:\n%s\n", commands.Redact(d.logs.String()))
		return fmt.Errorf("demo failed: %s", strings.Join(d.failures, "; "))
	}
	return nil
}

// demoWorld starts the emulated world in dir and says what it runs.
func (a *app) demoWorld(ctx context.Context, dir string, factor float64, s3 string, t0 time.Time) (*world.World, error) {
	// The organization's quotas as an identity-validated organization has them: Scaleway's
	// defaults (payment method only) fit one seed cluster, and the demo makes two.
	w, err := world.Start(ctx, world.Options{Dir: dir, TimeFactor: factor, S3: s3, OrgQuotas: scwsim.IdentityValidatedQuotas()})
	if err != nil {
		return nil, fmt.Errorf("demo: start the emulated world: %w", err)
	}
	bucket := "file (kubeconfig links are local paths)"
	if w.S3 != nil {
		bucket = "versitygw S3 on loopback (presigned kubeconfig links)"
	}
	a.printf("emulated world up in %s: Scaleway, GitHub, Image Factory, Talos nodes, rescue SSH, %s\n",
		time.Since(t0).Round(time.Millisecond), bucket)
	return w, nil
}

// demoSeed seeds the GitHub stand-in (a repository, alice who maintains it with one SSH key, bob
// who reads it, an issue) and prepares the handler's environment; it returns alice's private key.
func (a *app) demoSeed(w *world.World, dir string) (*demoRun, age.Identity, error) {
	const repo = "acme/shop"
	gh := w.GitHub
	gh.AddRepo(repo, "main")
	gh.SetPermission(repo, "alice", "maintain")
	gh.SetPermission(repo, "bob", "read")
	alicePub, aliceID, err := demoKey()
	if err != nil {
		return nil, nil, err
	}
	gh.AddUserKey("alice", alicePub)
	number := gh.AddIssue(repo, ghsim.Issue{Number: 42, Title: "Try the new ingress on a POC cluster", Author: "alice"})
	a.printf("seeded %s: alice (maintain, one ssh-ed25519 key), bob (read), issue #%d\n\n", repo, number)

	env := map[string]string{}
	for _, kv := range w.Env() {
		env[kv[0]] = kv[1]
	}
	env["GITHUB_REPOSITORY"] = repo
	env["GITHUB_SERVER_URL"] = "https://github.com"
	env["GITHUB_EVENT_NAME"] = "issue_comment"
	env["POC_STICKY_INTERVAL"] = "1s"
	env["POC_LOCK_WAIT"] = "1m"
	logs := &syncio.Buffer{}
	quiet := *a
	quiet.log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	quiet.stdout = io.Discard // Actions workflow commands: not in Actions
	return &demoRun{a: a, quiet: &quiet, logs: logs, w: w, repo: repo, number: number, env: env, dir: dir, printed: map[int64]string{}}, aliceID, nil
}

// step runs one comment and its check; a failure is recorded and printed, not returned.
func (d *demoRun) step(ctx context.Context, who, body string, check func(chatops.Outcome) error) {
	out, err := d.comment(ctx, who, body)
	if err == nil && check != nil {
		err = check(out)
	}
	if err != nil {
		d.failures = append(d.failures, fmt.Sprintf("%s's %q: %v", who, body, err))
		d.a.printf("✗ %v\n\n", err)
	}
}

// commands plays alice's up and cost, bob's refused up, and alice's down on the first issue.
func (d *demoRun) commands(ctx context.Context, aliceID age.Identity) {
	w := d.w
	d.step(ctx, "alice", "/poc up --ttl 4h", func(o chatops.Outcome) error {
		if !o.OK {
			return fmt.Errorf("up did not succeed (%+v)", o)
		}
		return d.checkKubeconfig(ctx, aliceID)
	})
	d.step(ctx, "alice", "/poc cost", func(o chatops.Outcome) error {
		if !o.OK {
			return fmt.Errorf("cost did not succeed (%+v)", o)
		}
		return nil
	})
	calls := w.Scaleway.CallCount()
	d.step(ctx, "bob", "/poc up", func(o chatops.Outcome) error {
		if o.Refused == "" {
			return fmt.Errorf("bob's up was not refused (%+v)", o)
		}
		if n := w.Scaleway.CallCount() - calls; n != 0 {
			return fmt.Errorf("bob's refused up made %d Scaleway calls", n)
		}
		d.a.printf("  (Scaleway calls during bob's command: 0)\n\n")
		return nil
	})
	d.step(ctx, "alice", "/poc down", func(o chatops.Outcome) error {
		if !o.OK {
			return fmt.Errorf("down did not succeed (%+v)", o)
		}
		for _, r := range w.Scaleway.Inventory() {
			if strings.Contains(strings.Join(r.Tags, ","), "acme-shop-42") {
				return fmt.Errorf("down left %s %s", r.Kind, r.Name)
			}
		}
		return nil
	})
}

// expiry makes a second cluster with a short lifetime, then runs the workflow's schedule as it
// would run 1h30, 1h35 and 2h05 later (the bot's clock is moved, not waited for).
func (d *demoRun) expiry(ctx context.Context) {
	gh := d.w.GitHub
	d.number = gh.AddIssue(d.repo, ghsim.Issue{Number: 43, Title: "Load-test the edge gateway", Author: "alice"})
	d.step(ctx, "alice", "/poc up --ttl 2h", func(o chatops.Outcome) error {
		if !o.OK {
			return fmt.Errorf("up did not succeed (%+v)", o)
		}
		return nil
	})
	base := time.Now()
	owned := func() int {
		n := 0
		for _, r := range d.w.Scaleway.Inventory() {
			if provision.OwnedBy(r.Tags, "acme-shop-43") {
				n++
			}
		}
		return n
	}
	for _, after := range []time.Duration{90 * time.Minute, 95 * time.Minute, 125 * time.Minute} {
		before := len(gh.Comments(d.repo, d.number))
		at := base.Add(after)
		d.quiet.now = func() time.Time { return at }
		err := d.schedule(ctx, after)
		if err == nil {
			err = checkExpiry(after, len(gh.Comments(d.repo, d.number))-before, owned())
		}
		if err != nil {
			d.failures = append(d.failures, fmt.Sprintf("schedule at +%s: %v", after, err))
			d.a.printf("✗ %v\n\n", err)
		}
	}
	d.quiet.now = nil
}

// checkExpiry judges the schedule's run `after` the 2 h cluster was made, from the comments it
// posted and the resources left: one warning at 1h30, nothing at 1h35, the teardown at 2h05.
func checkExpiry(after time.Duration, newComments, owned int) error {
	const warnAt, expiry = 90 * time.Minute, 2 * time.Hour
	switch {
	case after < expiry && after == warnAt && newComments != 1:
		return fmt.Errorf("the schedule 1h30 before expiry posted %d comments, want one warning", newComments)
	case after < expiry && after != warnAt && newComments != 0:
		return fmt.Errorf("the warning was posted again (%d new comments)", newComments)
	case after < expiry && owned == 0:
		return errors.New("the cluster was destroyed before its expiry")
	case after >= expiry && (owned != 0 || newComments == 0):
		return fmt.Errorf("after expiry: %d resources left, %d comments posted", owned, newComments)
	}
	return nil
}

// leakedSecrets names the comments and log lines that contain a secret.
func leakedSecrets(comments []ghsim.Comment, logs string) []string {
	var out []string
	for _, c := range comments {
		if commands.ContainsSecret(c.Body) {
			out = append(out, fmt.Sprintf("comment %d contains a secret", c.ID))
		}
	}
	for _, line := range strings.Split(logs, "\n") {
		if commands.ContainsSecret(line) {
			out = append(out, "a log line contains a secret: "+commands.Redact(line))
		}
	}
	return out
}

type demoRun struct {
	a, quiet *app
	logs     *syncio.Buffer // the handler's log
	failures []string
	w        *world.World
	repo     string
	number   int
	env      map[string]string
	dir      string
	runs     int
	printed  map[int64]string // comment id → body last printed
	eyes     []time.Duration
}

// comment posts a user's comment on the stand-in and runs `bot handle` on the event GitHub would
// send, printing the bot's comments as they appear and change.
func (d *demoRun) comment(ctx context.Context, login, body string) (chatops.Outcome, error) {
	d.runs++
	d.a.printf("━━━ %s comments on %s#%d: %s\n\n", login, d.repo, d.number, body)
	id := d.w.GitHub.AddComment(d.repo, d.number, login, body)
	path := filepath.Join(d.dir, fmt.Sprintf("event-%d.json", d.runs))
	if err := os.WriteFile(path, ghsim.CommentPayload(d.repo, d.number, id, login, d.w.GitHub.UserID(login), body, d.w.GitHub.InstallationID(d.repo)), 0o600); err != nil {
		return chatops.Outcome{}, err
	}
	env := map[string]string{"GITHUB_EVENT_PATH": path, "GITHUB_RUN_ID": strconv.Itoa(9000 + d.runs)}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return d.env[k]
	}
	type result struct {
		out chatops.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := d.quiet.handle(ctx, getenv, time.Now())
		done <- result{out, err}
	}()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			d.printComments(true)
			if r.out.EyesAfter > 0 {
				d.eyes = append(d.eyes, r.out.EyesAfter)
			}
			reactions := []string{}
			for _, re := range d.w.GitHub.Reactions(d.repo, d.number) {
				if re.CommentID == id {
					reactions = append(reactions, reactionEmoji(re.Content))
				}
			}
			d.a.printf("  reactions on %s's comment: %s · 👀 after %s\n\n", login, strings.Join(reactions, " "),
				r.out.EyesAfter.Round(time.Millisecond))
			return r.out, r.err
		case <-tick.C:
			d.printComments(false)
		case <-ctx.Done():
			return chatops.Outcome{}, ctx.Err()
		}
	}
}

// schedule runs `bot handle` on the event of the workflow's cron, as GitHub would send it `after`
// the cluster was created, and prints what the bot posted.
func (d *demoRun) schedule(ctx context.Context, after time.Duration) error {
	d.runs++
	d.a.printf("━━━ %s later, the workflow's schedule runs (bot reap)\n\n", commands.FormatDuration(after))
	path := filepath.Join(d.dir, fmt.Sprintf("event-%d.json", d.runs))
	payload := []byte(`{"schedule": "7,37 * * * *", "workflow": ".github/workflows/poc.yml"}`)
	if err := os.WriteFile(path, payload, 0o600); err != nil {
		return err
	}
	env := map[string]string{"GITHUB_EVENT_PATH": path, "GITHUB_EVENT_NAME": "schedule", "GITHUB_RUN_ID": strconv.Itoa(9000 + d.runs)}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return d.env[k]
	}
	_, err := d.quiet.handle(ctx, getenv, time.Now())
	d.printComments(true)
	return err
}

var hiddenRE = regexp.MustCompile(`(?m)^<!-- [^>]*-->\n?`)

// printComments prints every bot comment that is new or changed since it was last printed.
func (d *demoRun) printComments(final bool) {
	for _, c := range d.w.GitHub.Comments(d.repo, d.number) {
		if c.AuthorType != "Bot" || d.printed[c.ID] == c.Body {
			continue
		}
		state := "new"
		if _, seen := d.printed[c.ID]; seen {
			state = fmt.Sprintf("edited, %d edits so far", c.Edits)
		}
		d.printed[c.ID] = c.Body
		text := strings.TrimSpace(hiddenRE.ReplaceAllString(c.Body, ""))
		d.a.printf("┌─ comment %d by %s (%s)\n", c.ID, c.Author, state)
		for _, line := range strings.Split(text, "\n") {
			d.a.printf("│ %s\n", line)
		}
		d.a.printf("└─\n\n")
	}
}

func (d *demoRun) eyesAverage() time.Duration {
	if len(d.eyes) == 0 {
		return 0
	}
	var sum time.Duration
	for _, e := range d.eyes {
		sum += e
	}
	return sum / time.Duration(len(d.eyes))
}

var demoCurlRE = regexp.MustCompile(`curl -fsS '([^']+)' \| age -d`)

// checkKubeconfig fetches the link of the last status comment and opens it with alice's private
// key, as alice would; it prints the size and the API server, never the content.
func (d *demoRun) checkKubeconfig(ctx context.Context, id age.Identity) error {
	var link string
	for _, c := range d.w.GitHub.Comments(d.repo, d.number) {
		if m := demoCurlRE.FindStringSubmatch(c.Body); m != nil {
			link = m[1]
		}
	}
	if link == "" {
		return errors.New("no kubeconfig link in the bot's comments")
	}
	var sealed []byte
	if strings.HasPrefix(link, "file://") {
		u, err := url.Parse(link)
		if err != nil {
			return err
		}
		if sealed, err = os.ReadFile(u.Path); err != nil {
			return fmt.Errorf("read the kubeconfig object: %w", err)
		}
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("fetch the kubeconfig link: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("fetch the kubeconfig link: HTTP %d", resp.StatusCode)
		}
		if sealed, err = io.ReadAll(resp.Body); err != nil {
			return err
		}
	}
	r, err := age.Decrypt(bytes.NewReader(sealed), id)
	if err != nil {
		return fmt.Errorf("decrypt the kubeconfig with alice's key: %w", err)
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	server := ""
	for _, line := range strings.Split(string(plain), "\n") {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "server:") {
			server = strings.TrimSpace(strings.TrimPrefix(s, "server:"))
		}
	}
	d.a.printf("  alice runs the curl | age -d line: %d bytes of ciphertext decrypt to a %d-byte kubeconfig for %s\n\n",
		len(sealed), len(plain), server)
	return nil
}

// demoKey is alice's SSH key pair: the public half goes to the GitHub stand-in.
func demoKey() (string, age.Identity, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, err
	}
	spub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", nil, err
	}
	id, err := agessh.NewEd25519Identity(priv)
	if err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(spub))) + " alice@laptop", id, nil
}

func reactionEmoji(c string) string {
	if e, ok := map[string]string{"eyes": "👀", "rocket": "🚀", "hooray": "🎉", "confused": "😕", "+1": "👍", "-1": "👎"}[c]; ok {
		return e
	}
	return c
}
