package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// What the tests of this package share: an emulated world per test, the bot run in-process or as
// a process against it, and the state documents a test starts from.

// testActionRef is the Action reference the tests' `bot init` pins.
const testActionRef = "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"

// testTimeFactor is the latency scale of the tests' worlds (world.Options.TimeFactor).
const testTimeFactor = 0.005

// startWorld starts an emulated world for tb and closes it when tb ends. Options left zero are
// the tests' usual: a fresh Dir, testTimeFactor, file-backed buckets. The context it returns is
// tb's, ended after limit (a bound that catches a hang, not a slow machine); it is cancelled
// before the world is closed.
func startWorld(tb testing.TB, limit time.Duration, opts world.Options) (context.Context, *world.World) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), limit)
	tb.Cleanup(cancel)
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	if opts.TimeFactor == 0 {
		opts.TimeFactor = testTimeFactor
	}
	if opts.S3 == "" {
		opts.S3 = "file"
	}
	w, err := world.Start(ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.Close() })
	return ctx, w
}

// envMap is the world's settings as a map: the environment a run of the bot gets.
func envMap(w *world.World) map[string]string {
	m := map[string]string{}
	for _, kv := range w.Env() {
		m[kv[0]] = kv[1]
	}
	return m
}

// cliWorld is startWorld for the in-process CLI: the world's settings are in the process
// environment, as an operator's shell holds them, and its state store is open.
func cliWorld(t *testing.T, limit time.Duration) (context.Context, *world.World, *statestore.Store) {
	t.Helper()
	ctx, w := startWorld(t, limit, world.Options{})
	for _, kv := range w.Env() {
		t.Setenv(kv[0], kv[1])
	}
	store, err := statestore.Open(ctx, statestore.Config{StateURL: w.StateURL, KeyURL: w.StateKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return ctx, w, store
}

// only reads the environment from env alone.
func only(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// over reads the environment from env, then from the process's.
func over(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

// runBot runs the bot in-process with args and the environment getenv reads, and returns what it
// wrote to its standard output and error.
func runBot(ctx context.Context, getenv func(string) string, args ...string) (stdout, stderr string, err error) {
	var so, se bytes.Buffer
	err = newApp(&so, &se, getenv).dispatch(ctx, args)
	return so.String(), se.String(), err
}

// runBotOut is runBot with both outputs in one text, in the order they were written.
func runBotOut(ctx context.Context, env map[string]string, args ...string) (string, error) {
	var out bytes.Buffer
	err := newApp(&out, &out, only(env)).dispatch(ctx, args)
	return out.String(), err
}

// putReady writes the state document of a ready cluster under h (its phase set to ready), with the
// default spec's state as the body.
func putReady(ctx context.Context, t *testing.T, store *statestore.Store, h statestore.Header) {
	t.Helper()
	st, err := provision.NewState(h.Cluster, provision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	h.Phase = string(lifecycle.PhaseReady)
	if err := store.Put(ctx, &statestore.Document{Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
}

// githubReadOnly fails t for each request since the first n of the world's GitHub that is not a
// read; what names the run.
func githubReadOnly(t *testing.T, w *world.World, n int, what string) {
	t.Helper()
	for _, r := range w.GitHub.Requests()[n:] {
		if r.Method != http.MethodGet {
			t.Errorf("%s made %s %s", what, r.Method, r.Path)
		}
	}
}

// laptop is an administrator's shell against the world: the world's settings and the GitHub token
// of ada, admin of repo (made with its default branch main).
func laptop(w *world.World, repo string) map[string]string {
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "ada", "admin")
	env := envMap(w)
	env["GH_TOKEN"] = w.GitHub.AddUserToken("ada")
	return env
}

// adminLaptop is laptop with the organization owner's Scaleway key instead of the bot's: what
// `bot init --iam` and `bot uninstall --iam` make and remove the bot's identities with.
func adminLaptop(w *world.World, repo string) map[string]string {
	env := laptop(w, repo)
	env["SCW_ACCESS_KEY"], env["SCW_SECRET_KEY"] = w.AdminAccessKey, w.AdminSecretKey
	return env
}

// botProcLease is the lock lease of the tests' bot processes: short, so that a killed run's lock
// is taken over in seconds, and long enough for a loaded machine's renewals (at 3 s, a renewal's
// HEAD that took over 2 s under the suite's load lost a resume its lock).
const botProcLease = 10 * time.Second

// newBotProc builds the bot and runs it against w with the short lock lease botProcLease.
func newBotProc(t *testing.T, w *world.World) *botProc {
	t.Helper()
	b := &botProc{bin: buildBot(t), env: envMap(w)}
	for k, v := range map[string]string{"POC_LOCK_LEASE": botProcLease.String(), "POC_LOCK_WAIT": "1m", "USER": "tester"} {
		b.env[k] = v
	}
	return b
}

// writeEvent writes a webhook payload to dir/name.json, for GITHUB_EVENT_PATH, and returns the path.
func writeEvent(tb testing.TB, dir, name string, payload []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, payload, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// actionsEnv is the environment a workflow run gives the bot's process for one event: PATH and
// HOME, the event (its name, the payload's file, the repository, the run id), extra, and the
// world's settings.
func actionsEnv(w *world.World, event, path, repo, runID string, extra ...string) []string {
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GITHUB_EVENT_NAME=" + event,
		"GITHUB_EVENT_PATH=" + path, "GITHUB_REPOSITORY=" + repo, "GITHUB_RUN_ID=" + runID}, extra...)
	for _, kv := range w.Env() {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}
