package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// botProc runs the real bot binary against an in-process world, with an environment made from
// scratch (nothing of the test's own environment leaks in but PATH, HOME and TMPDIR).
type botProc struct {
	bin string
	env map[string]string
}

func (b *botProc) environ(over map[string]string) []string {
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	for k, v := range b.env {
		env[k] = v
	}
	for k, v := range over {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

type result struct {
	stdout, stderr string
	code           int
}

// procBound bounds one bot process of these tests (a hang, not a speed, is what it catches).
const procBound = 5 * time.Minute

// run runs the bot to its end. over sets variables; an empty value unsets one. The bound only
// stops a hung process: a whole up takes ~15 s here, and over 2 min on a machine loaded ~20 deep.
func (b *botProc) run(t *testing.T, over map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), procBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.environ(over)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("bot %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("bot %v did not end within %v\nstderr:\n%s", args, procBound, r.stderr)
	}
	t.Logf("bot %s: exit %d in %s", strings.Join(args, " "), r.code, took.Round(time.Millisecond))
	return r
}

func (b *botProc) mustRun(t *testing.T, over map[string]string, args ...string) result {
	t.Helper()
	r := b.run(t, over, args...)
	if r.code != 0 {
		t.Fatalf("bot %v exited %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// owned counts the emulator's live resources of a cluster by kind (IAM keys carry no tags: by name).
func owned(w *world.World, clusterName string) map[string]int {
	out := map[string]int{}
	for _, r := range w.Scaleway.Inventory() {
		if provision.OwnedBy(r.Tags, clusterName) || (r.Kind == "iam_ssh_key" && strings.Contains(r.Name, clusterName)) {
			out[r.Kind]++
		}
	}
	return out
}

// posts counts creations by product and last path segment (instance/ips, baremetal/servers, …).
func posts(w *world.World) map[string]int {
	out := map[string]int{}
	for _, c := range w.Scaleway.Calls() {
		if c.Method == "POST" && c.Status < 300 {
			segs := strings.Split(strings.Trim(c.Path, "/"), "/")
			out[segs[0]+"/"+segs[len(segs)-1]]++
		}
	}
	return out
}

// TestProcessCrashResumeAndCommands is the bot as an operator runs it: real processes against one
// emulated world. An up is SIGKILLed mid-run; the next up waits for the dead run's lease, resumes
// and creates nothing twice; the state, status, kubeconfig and images commands are checked on the
// cluster it made; down leaves nothing of it; prune then removes the unused shared image.
func TestProcessCrashResumeAndCommands(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the bot and runs a whole cluster: not in -short")
	}
	ctx, w := startWorld(t, 30*time.Minute, world.Options{})
	b := newBotProc(t, w)
	const name = "c1"

	// 1. An up killed with SIGKILL once a few resources are done.
	killCtx, cancel := context.WithTimeout(ctx, procBound)
	defer cancel()
	cmd := exec.CommandContext(killCtx, b.bin, "up", "--cluster", name)
	cmd.Env = b.environ(nil)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 64)
	var firstRun bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			firstRun.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if f := strings.Fields(sc.Text()); len(f) >= 3 && f[1] == "✓" {
				done <- f[2]
			}
		}
		close(done)
	}()
	// Killed as soon as a root volume is done: by then the IPs, the security group, the shared
	// snapshot and the worker order exist, and the servers' creations are being sent.
	var doneSteps []string
	deadline := time.After(60 * time.Second)
	for len(doneSteps) == 0 || !strings.HasPrefix(doneSteps[len(doneSteps)-1], "volume-") {
		select {
		case s, ok := <-done:
			if !ok {
				t.Fatalf("the first up ended before it could be killed:\n%s", firstRun.String())
			}
			doneSteps = append(doneSteps, s)
		case <-deadline:
			t.Fatalf("the first up showed no done volume in 60 s:\n%s", firstRun.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for range done { // drain
	}
	t.Logf("killed the first up after %v", doneSteps)
	if ps := cmd.ProcessState; ps == nil || ps.Success() {
		t.Fatalf("the first up was not killed: %v", ps)
	}
	before := owned(w, name)
	if before["instance_ip"] != 3 || before["baremetal_server"] != 1 || before["block_volume"] == 0 {
		t.Fatalf("the killed up had created no IP yet (%v): the test did not kill mid-run", before)
	}
	show := b.mustRun(t, nil, "state", "show", "--cluster", name)
	if !strings.Contains(show.stdout, `"phase": "provisioning"`) || !regexp.MustCompile(`"lock": \{`).MatchString(show.stdout) {
		t.Fatalf("after the kill, want phase provisioning and the dead run's lock:\n%s", show.stdout)
	}

	// 2. The next up waits for the dead lease, resumes, and creates nothing twice.
	t0 := time.Now()
	up := b.mustRun(t, nil, "up", "--cluster", name)
	t.Logf("resumed up took %s (lease %s)", time.Since(t0).Round(time.Millisecond), botProcLease)
	if testing.Verbose() {
		t.Logf("first run:\n%s\nresumed run:\n%s", firstRun.String(), up.stderr)
	}
	if !strings.Contains(up.stdout, "cluster c1 is ready") {
		t.Errorf("resumed up says:\n%s", up.stdout)
	}
	got := owned(w, name)
	want := map[string]int{"instance_server": 3, "instance_ip": 3, "block_volume": 3, "instance_security_group": 1,
		"baremetal_server": 1, "iam_ssh_key": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("after the resumed up: %d %s, want %d (inventory %v)", got[k], k, n, got)
		}
	}
	p := posts(w)
	for k, n := range map[string]int{"instance/ips": 3, "instance/servers": 3, "block/volumes": 3, "instance/security_groups": 1,
		"iam/ssh-keys": 1, "baremetal/servers": 1, "block/import-from-object-storage": 1} {
		if p[k] != n {
			t.Errorf("%d successful POST %s over both runs, want %d (a create repeated after the crash): %v", p[k], k, n, p)
		}
	}

	noKey := map[string]string{"POC_STATE_KEY": ""}

	t.Run("state ls works without the key", func(t *testing.T) {
		r := b.mustRun(t, noKey, "state", "ls")
		if !regexp.MustCompile(`(?m)^c1\s+ready\s`).MatchString(r.stdout) {
			t.Errorf("state ls:\n%s", r.stdout)
		}
		if r := b.run(t, noKey, "state", "show", "--cluster", name); r.code != 1 || !strings.Contains(r.stderr, "POC_STATE_KEY") {
			t.Errorf("state show without the key: exit %d, stderr %q; want 1 naming POC_STATE_KEY", r.code, r.stderr)
		}
	})

	t.Run("state show redacts", func(t *testing.T) {
		r := b.mustRun(t, nil, "state", "show", "--cluster", name)
		for _, bad := range []string{"BEGIN", "PRIVATE KEY", "client-key-data", "LS0tLS1CRUdJTi"} {
			if strings.Contains(r.stdout, bad) || strings.Contains(r.stderr, bad) {
				t.Errorf("state show prints %q", bad)
			}
		}
		if !strings.Contains(r.stdout, "[redacted") || !strings.Contains(r.stdout, `"lock": null`) {
			t.Errorf("state show: want redacted secrets and a free lock:\n%.2000s", r.stdout)
		}
	})

	t.Run("kubeconfig -o writes mode 0600", func(t *testing.T) {
		for _, c := range []string{"kubeconfig", "talosconfig"} {
			path := filepath.Join(t.TempDir(), c)
			r := b.mustRun(t, nil, c, "--cluster", name, "-o", path)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatalf("%s -o: %v (stderr %q)", c, err, r.stderr)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s file mode %v, want 0600", c, fi.Mode().Perm())
			}
			data, _ := os.ReadFile(path)
			if c == "kubeconfig" && !bytes.Contains(data, []byte("client-certificate-data")) {
				t.Errorf("kubeconfig file lacks the client certificate: %.200s", data)
			}
			if r.stdout != "" {
				t.Errorf("%s -o also wrote to stdout (%d bytes)", c, len(r.stdout))
			}
		}
	})

	t.Run("status", func(t *testing.T) {
		r := b.mustRun(t, nil, "status", "--cluster", name)
		for _, want := range []string{"phase:        ready", "requested by: tester", "lock:         free", "keep label:   no",
			"cost:         accrued", "per day", "✓ talos-api cp-0", "✓ talos-api cp-2", "✓ talos-api worker", "✓ kubernetes-api",
			"✓ nodes", "✓ cilium", "✓ cluster-dns", "✓ routing", "✓ pod-network", // the readiness checks up waits for
			"server-0", "instance.server", "ip-1", "worker"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "BEGIN") {
			t.Error("status prints key material")
		}
		if r := b.run(t, nil, "status", "--cluster", "nope-1", "--health=false"); r.code != 1 || !strings.Contains(r.stderr, "no such cluster") {
			t.Errorf("status of a missing cluster: exit %d, %q", r.code, r.stderr)
		}
	})

	t.Run("images ls and prune keep what is in use", func(t *testing.T) {
		r := b.mustRun(t, nil, "images", "ls")
		if !regexp.MustCompile(`(?m)^talos/\S+\s.*\(available\)\s+c1\s*$`).MatchString(r.stdout) {
			t.Errorf("images ls: want the image with its available snapshot, used by c1:\n%s", r.stdout)
		}
		r = b.mustRun(t, nil, "images", "prune", "--min-age", "0s")
		if !strings.Contains(r.stdout, "kept: in use") || !strings.Contains(r.stdout, "removed 0 image(s)") {
			t.Errorf("prune with the image in use:\n%s", r.stdout)
		}
	})

	// 3. Down leaves nothing of the cluster (its worker parked: POC_PARK_FOR is --park-for);
	// `pool ls` lists the parked worker, `pool rm` deletes it; prune then removes the image and
	// its snapshot.
	down := b.mustRun(t, map[string]string{"POC_PARK_FOR": "1h"}, "down", "--cluster", name)
	if left := owned(w, name); len(left) > 0 {
		t.Errorf("down left %v\n%s", left, down.stdout)
	}
	t.Run("pool ls and rm", func(t *testing.T) {
		r := b.mustRun(t, nil, "pool", "ls")
		m := regexp.MustCompile(`(?m)^(\S+)\s+\S+\s+fr-par-1\s+EM-\S+\s+v\S+\s+\S+\s+c1\s`).FindStringSubmatch(r.stdout)
		if m == nil || !strings.Contains(r.stdout, "1 parked workers") {
			t.Fatalf("pool ls after a down with POC_PARK_FOR: want c1's worker:\n%s\n%s", r.stdout, down.stdout)
		}
		if r := b.run(t, nil, "pool", "rm"); r.code == 0 || !strings.Contains(r.stderr, "--server") {
			t.Errorf("pool rm without --server: exit %d, %q", r.code, r.stderr)
		}
		b.mustRun(t, nil, "pool", "rm", "--server", m[1])
		gone := func() bool {
			for _, res := range w.Scaleway.Inventory() {
				if res.ID == m[1] {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(20 * time.Second) // the delete's transition, scaled
		for !gone() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !gone() {
			t.Errorf("pool rm left the server %s", m[1])
		}
		if r := b.mustRun(t, nil, "pool", "ls"); !strings.Contains(r.stdout, "0 parked workers") {
			t.Errorf("pool ls after rm:\n%s", r.stdout)
		}
	})
	// 4. The warm pool: `pool fill` builds the two spares of pool.size in the repository's
	// .github/poc.yml on its default branch (read as `bot handle` reads it) at once, `pool ls`
	// lists them, `pool rm --spare` tears one down, `bot up` claims the other (renamed: nothing
	// left under the spare's name), and `down` of the claimed cluster leaves nothing.
	t.Run("pool fill, ls, rm and a claim by bot up", func(t *testing.T) {
		repo := map[string]string{"GITHUB_REPOSITORY": "acme/shop"}
		w.GitHub.AddRepo("acme/shop", "main")
		w.GitHub.SetFile("acme/shop", "main", ".github/poc.yml", []byte("pool:\n  size: 2\n"))
		fill := b.mustRun(t, repo, "pool", "fill")
		if !strings.Contains(fill.stdout, ".github/poc.yml of acme/shop's default branch") {
			t.Errorf("pool fill does not say it read the default branch's .github/poc.yml:\n%s", fill.stdout)
		}
		ls := b.mustRun(t, nil, "pool", "ls")
		spares := regexp.MustCompile(`(?m)^(spare-[a-z]+)\s+acme/shop\s+ready\s`).FindAllStringSubmatch(ls.stdout, -1)
		if len(spares) != 2 || !strings.Contains(ls.stdout, "2 warm spares") {
			t.Fatalf("pool ls after fill --size 2: want two ready spares:\n%s\nfill:\n%s", ls.stdout, fill.stdout)
		}
		if r := b.mustRun(t, nil, "pool", "rm", "--spare", spares[0][1]); len(owned(w, spares[0][1])) > 0 {
			t.Errorf("pool rm --spare left %v\n%s", owned(w, spares[0][1]), r.stdout)
		}
		up := b.mustRun(t, repo, "up", "--cluster", "c2")
		if !strings.Contains(up.stdout, "path:           warm: claimed a warm spare (age") || !strings.Contains(up.stdout, spares[1][1]) {
			t.Errorf("bot up with a spare ready: want it claimed:\n%s", up.stdout)
		}
		if left := owned(w, spares[1][1]); len(left) > 0 || len(owned(w, "c2")) == 0 {
			t.Errorf("after the claim: %v under the spare's name, %v under c2's", left, owned(w, "c2"))
		}
		b.mustRun(t, repo, "down", "--cluster", "c2")
		if left := owned(w, "c2"); len(left) > 0 {
			t.Errorf("down of the claimed cluster left %v", left)
		}
		if r := b.mustRun(t, nil, "pool", "ls"); !strings.Contains(r.stdout, "0 warm spares") {
			t.Errorf("pool ls at the end:\n%s", r.stdout)
		}
	})
	if r := b.mustRun(t, noKey, "state", "ls"); strings.Contains(r.stdout, "c1 ") {
		t.Errorf("state ls after down still lists c1:\n%s", r.stdout)
	}
	snapshots := func() int {
		n := 0
		for _, r := range w.Scaleway.Inventory() {
			if r.Kind == "block_snapshot" && provision.HasTag(r.Tags, provision.TagShared) {
				n++
			}
		}
		return n
	}
	if snapshots() != 1 {
		t.Fatalf("want the one shared snapshot after down, got %d", snapshots())
	}
	dry := b.mustRun(t, nil, "images", "prune", "--dry-run", "--min-age", "0s")
	if !strings.Contains(dry.stdout, "would remove snapshot") || !strings.Contains(dry.stdout, "would remove object") || snapshots() != 1 {
		t.Errorf("dry run removed something or said nothing (snapshots %d):\n%s", snapshots(), dry.stdout)
	}
	young := b.mustRun(t, nil, "images", "prune")
	if !strings.Contains(young.stdout, "kept: stored") || snapshots() != 1 {
		t.Errorf("default --min-age 1h must keep the image stored seconds ago:\n%s", young.stdout)
	}
	// A run making the image holds its lock: prune keeps it, naming the run.
	imageKey := regexp.MustCompile(`(?m)^(talos/\S+)`).FindStringSubmatch(b.mustRun(t, nil, "images", "ls").stdout)
	if imageKey == nil {
		t.Fatal("images ls lists no talos/ image after down")
	}
	lockStore, err := statestore.Open(ctx, statestore.Config{StateURL: w.StateURL, KeyURL: w.StateKey})
	if err != nil {
		t.Fatal(err)
	}
	maker, err := lockStore.Hold(ctx, statestore.DigestLock(statestore.LockImage, world.ImageBucket+"/"+imageKey[1]),
		statestore.LockInfo{Actor: "mallory-maker", RunID: "4711", Command: "image " + imageKey[1]}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	busy := b.mustRun(t, nil, "images", "prune", "--min-age", "0s")
	if !strings.Contains(busy.stdout, "kept: being made by mallory-maker") || snapshots() != 1 {
		t.Errorf("prune while the image's lock is held: want it kept, naming the holder (snapshots %d):\n%s", snapshots(), busy.stdout)
	}
	if err := maker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lockStore.Close()
	pr := b.mustRun(t, nil, "images", "prune", "--min-age", "0s")
	if snapshots() != 0 || !strings.Contains(pr.stdout, "removed 1 image(s)") {
		t.Errorf("prune after down: %d shared snapshots left:\n%s", snapshots(), pr.stdout)
	}
	if r := b.mustRun(t, nil, "images", "ls"); strings.Contains(r.stdout, "talos/") {
		t.Errorf("images ls after prune:\n%s", r.stdout)
	}
}

// TestHelpAndConfigErrors checks what a person sees first: every command's --help (exit 0, its
// variables named) and the errors of a missing or broken configuration (exit 1, the variable named).
func TestHelpAndConfigErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot: not in -short")
	}
	b := &botProc{bin: buildBot(t), env: map[string]string{}}

	// Every leaf command of the tree, children included.
	var leaves [][]string
	var envOf = map[string][]string{}
	for _, c := range commandTree() {
		if len(c.children) == 0 {
			leaves = append(leaves, []string{c.name})
			envOf[c.name] = c.env
		}
		for _, k := range c.children {
			leaves = append(leaves, []string{c.name, k.name})
			envOf[c.name+" "+k.name] = k.env
		}
	}
	// What a workflow author needs to find in each command's help, beyond its own env list.
	wantVars := map[string][]string{
		"up":          {"POC_CLUSTER", "POC_TTL", "POC_LOCK_LEASE", "POC_STATE_URL", "POC_STATE_KEY", "SCW_ACCESS_KEY", "SCW_SECRET_KEY", "POC_IMAGE_BUCKET"},
		"down":        {"POC_CLUSTER", "POC_LOCK_LEASE", "POC_STATE_URL", "POC_STATE_KEY", "SCW_SECRET_KEY", "POC_IMAGE_BUCKET"},
		"status":      {"POC_CLUSTER", "POC_STATE_URL", "POC_STATE_KEY", "SCW_SECRET_KEY"},
		"cost":        {"POC_CLUSTER", "POC_STATE_URL", "POC_STATE_KEY", "SCW_SECRET_KEY"},
		"kubeconfig":  {"POC_CLUSTER", "POC_STATE_URL", "POC_STATE_KEY"},
		"talosconfig": {"POC_CLUSTER", "POC_STATE_URL", "POC_STATE_KEY"},
		"state ls":    {"POC_STATE_URL"},
		"state show":  {"POC_CLUSTER", "POC_STATE_URL", "POC_STATE_KEY"},
		"images ls":   {"POC_STATE_URL", "POC_STATE_KEY", "POC_IMAGE_BUCKET"},
	}
	for name := range wantVars {
		if _, ok := envOf[name]; !ok {
			t.Errorf("command %q is not registered", name)
		}
	}
	for _, args := range leaves {
		name := strings.Join(args, " ")
		t.Run("help "+name, func(t *testing.T) {
			r := b.run(t, nil, append(args, "--help")...)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage: bot "+name) {
				t.Fatalf("bot %s --help: exit %d\nstdout:\n%s\nstderr:\n%s", name, r.code, r.stdout, r.stderr)
			}
			for _, v := range append(slices.Clone(envOf[name]), wantVars[name]...) {
				if !strings.Contains(r.stdout, v) {
					t.Errorf("bot %s --help does not name %s", name, v)
				}
			}
		})
	}
	for _, args := range [][]string{{"--help"}, {"state", "--help"}, {"images", "--help"}} {
		if r := b.run(t, nil, args...); r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("bot %v: exit %d, %q", args, r.code, r.stdout)
		}
	}
	if r := b.run(t, nil); r.code != 2 {
		t.Errorf("bot with no command: exit %d, want 2", r.code)
	}
	if r := b.run(t, nil, "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", r.code, r.stderr)
	}

	dir := t.TempDir()
	good := map[string]string{"POC_STATE_URL": "file://" + dir, "POC_STATE_KEY": "base64key://" + strings.Repeat("A", 43) + "="}
	scwVars := map[string]string{"SCW_ACCESS_KEY": "SCWXXXXXXXXXXXXXXXXX", "SCW_SECRET_KEY": "11111111-2222-4333-8444-555555555555",
		"SCW_DEFAULT_PROJECT_ID": "11111111-2222-4333-8444-555555555555", "SCW_API_URL": "http://127.0.0.1:9"}
	with := func(over map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range good {
			m[k] = v
		}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string // in stderr
	}{
		{"no state URL", with(map[string]string{"POC_STATE_URL": ""}), []string{"state", "show", "--cluster", "c1"}, []string{"POC_STATE_URL is not set"}},
		{"no state URL, ls", with(map[string]string{"POC_STATE_URL": ""}), []string{"state", "ls"}, []string{"POC_STATE_URL"}},
		{"no state key", with(map[string]string{"POC_STATE_KEY": ""}), []string{"status", "--cluster", "c1"}, []string{"POC_STATE_KEY is not set"}},
		{"empty base64key", with(map[string]string{"POC_STATE_KEY": "base64key://"}), []string{"kubeconfig", "--cluster", "c1"}, []string{"POC_STATE_KEY", "empty base64key"}},
		{"short key", with(map[string]string{"POC_STATE_KEY": "base64key://AAAA"}), []string{"state", "show", "--cluster", "c1"}, []string{"POC_STATE_KEY", "32 bytes"}},
		{"no Scaleway key", good, []string{"up", "--cluster", "c1"}, []string{"SCW_ACCESS_KEY and SCW_SECRET_KEY are not set"}},
		{"no project", with(map[string]string{"SCW_ACCESS_KEY": scwVars["SCW_ACCESS_KEY"], "SCW_SECRET_KEY": scwVars["SCW_SECRET_KEY"]}),
			[]string{"up", "--cluster", "c1"}, []string{"SCW_DEFAULT_PROJECT_ID"}},
		{"no image bucket", with(scwVars), []string{"up", "--cluster", "c1"}, []string{"POC_IMAGE_BUCKET is not set"}},
		{"no image bucket, images", good, []string{"images", "ls"}, []string{"POC_IMAGE_BUCKET is not set"}},
		{"bad lock lease", with(map[string]string{"POC_LOCK_LEASE": "soon"}), []string{"down", "--cluster", "c1"}, []string{"POC_LOCK_LEASE", "not a duration"}},
		{"bad ttl", good, []string{"up", "--cluster", "c1", "--ttl", "-1h"}, []string{"--ttl", "positive"}},
		{"no cluster", good, []string{"status"}, []string{"--cluster is required"}},
		{"unknown cluster", good, []string{"status", "--cluster", "c1"}, []string{"no such cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.run(t, tc.env, tc.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1\nstderr: %s", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, good["POC_STATE_KEY"][len("base64key://"):]) {
				t.Error("the key itself is printed")
			}
		})
	}
	// state ls on an empty store, without the key, works.
	if r := b.run(t, map[string]string{"POC_STATE_URL": good["POC_STATE_URL"]}, "state", "ls"); r.code != 0 || !strings.Contains(r.stdout, "CLUSTER") {
		t.Errorf("state ls without key on an empty store: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}
