package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// TestBudgetRaceProcesses is hole 2 of issue 11 as Actions would run it: five `bot handle`
// processes, one per issue, started at once on a repository with room for one cluster. Exactly one
// cluster exists afterwards; the four other runs end with a refusal naming the limit and leave
// nothing behind. Once by max_clusters, once by max_daily_eur.
func TestBudgetRaceProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the bot and runs a whole cluster per case: not in -short")
	}
	bin := buildBot(t)
	ctx, w := startWorld(t, 8*time.Minute, world.Options{}) // a hang, not a slow machine
	p := worldtest.New(t, w, worldtest.Options{})
	q, err := clusterops.Quote(ctx, cost.NewQuoter(cost.APISources(p.Client)...), p.Spec, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	eur := fmt.Sprintf("%.2f", float64(q.Daily.Nanos)*1.5/1e9) // one cluster and a half
	dir := t.TempDir()

	for ci, tc := range []struct{ repo, config, limit string }{
		{"race/count", "max_clusters: 1\n", "max_clusters"},
		{"race/money", "max_clusters: 10\nmax_daily_eur: " + eur + "\n", "max_daily_eur"},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			w.GitHub.AddRepo(tc.repo, "main")
			w.GitHub.SetPermission(tc.repo, "alice", "admin")
			w.GitHub.SetFile(tc.repo, "", ".github/poc.yml", []byte(tc.config))
			owner, name, _ := strings.Cut(tc.repo, "/")
			type res struct {
				code           int
				stdout, stderr string
			}
			results := make([]res, 5)
			var cmds []*exec.Cmd
			payloads := map[string][]byte{}
			for n := 1; n <= 5; n++ {
				w.GitHub.AddIssue(tc.repo, ghsim.Issue{Number: n, Author: "alice"})
				id := w.GitHub.AddComment(tc.repo, n, "alice", "/poc up")
				ev := filepath.Join(dir, fmt.Sprintf("%d-%d.json", ci, n))
				// A named pipe: every process blocks reading its event until all five are started,
				// then all get their event at once.
				if err := syscall.Mkfifo(ev, 0o600); err != nil {
					t.Fatal(err)
				}
				payloads[ev] = ghsim.CommentPayload(tc.repo, n, id, "alice", w.GitHub.UserID("alice"), "/poc up", w.GitHub.InstallationID(tc.repo))
				env := actionsEnv(w, "issue_comment", ev, tc.repo, strconv.Itoa(100*ci+n), "GITHUB_ACTIONS=true",
					"GITHUB_OUTPUT="+filepath.Join(dir, fmt.Sprintf("out-%d-%d", ci, n)),
					"GITHUB_STEP_SUMMARY="+filepath.Join(dir, fmt.Sprintf("sum-%d-%d", ci, n)))
				cmd := exec.CommandContext(ctx, bin, "handle")
				cmd.Env = env
				cmds = append(cmds, cmd)
			}
			var wg sync.WaitGroup
			for i, cmd := range cmds { // all five started before any ends
				var so, se bytes.Buffer
				cmd.Stdout, cmd.Stderr = &so, &se
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := cmd.Wait()
					results[i] = res{code: cmd.ProcessState.ExitCode(), stdout: so.String(), stderr: se.String()}
					if err != nil && cmd.ProcessState.ExitCode() < 0 {
						results[i].code = -1
					}
				}()
			}
			for ev, data := range payloads {
				go func() {
					// Opening for writing blocks until the process opens it for reading.
					if err := os.WriteFile(ev, data, 0o600); err != nil {
						t.Errorf("hand the event to its process: %v", err)
					}
				}()
			}
			wg.Wait()
			if ctx.Err() != nil {
				var tails []string
				for i, r := range results {
					tail := r.stderr
					if len(tail) > 3000 {
						tail = tail[len(tail)-3000:]
					}
					tails = append(tails, fmt.Sprintf("run %d (exit %d):\n%s", i+1, r.code, tail))
				}
				t.Fatalf("the five runs did not end in time:\n%s", strings.Join(tails, "\n"))
			}
			var created, refused []string
			for i, r := range results {
				cl := commands.ClusterName(owner, name, i+1)
				if r.code != 0 {
					t.Errorf("run %d exited %d\nstderr:\n%s", i+1, r.code, r.stderr)
					continue
				}
				comments := w.GitHub.Comments(tc.repo, i+1)
				last := comments[len(comments)-1].Body
				live := owned(w, cl)
				switch {
				case strings.Contains(last, "Nothing was created") && strings.Contains(last, tc.limit):
					refused = append(refused, cl)
					if len(live) > 0 {
						t.Errorf("refused run %d left %v", i+1, live)
					}
				case live["instance_server"] > 0:
					created = append(created, cl)
				default:
					t.Errorf("run %d neither created a cluster nor was refused by %s; last comment:\n%s", i+1, tc.limit, last)
				}
			}
			ls := (&botProc{bin: bin, env: envMap(w)}).mustRun(t, map[string]string{"POC_STATE_KEY": ""}, "state", "ls")
			docs := strings.Count(ls.stdout, name+"-")
			if len(created) != 1 || len(refused) != 4 || docs != 1 {
				t.Fatalf("created %v, refused %v, %d state documents: want 1, 4, 1\nstate ls:\n%s", created, refused, docs, ls.stdout)
			}
		})
	}
}
