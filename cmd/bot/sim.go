//go:build sim

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/sim/actions"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

func simCommand() *command {
	var (
		dir, s3        string
		timeFactor     float64
		faultRate      float64
		faultSeed      int
		quotaInstances int
		rescuePort     int
		quotas, quota  string
		s3Deletes      string
		readings       []string
		listReadings   bool
	)
	return &command{
		name:    "sim",
		summary: "run the emulated world on loopback and print the variables that point the bot at it",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			fs.StringVar(&dir, "dir", "", "where the buckets, disks and keys live (default: a new temporary directory)")
			fs.Float64Var(&timeFactor, "time-factor", 0.02, "scale of the real API latencies (docs/seed.md, Latencies); 1 = real time")
			fs.Float64Var(&faultRate, "fault-rate", 0, "share of Scaleway API requests answered 5xx or 429 before taking effect")
			fs.IntVar(&faultSeed, "fault-seed", 1, "seed of the injected faults")
			fs.IntVar(&quotaInstances, "quota-instances", 0, "Instance quota of the project (0: unlimited)")
			fs.StringVar(&quotas, "quotas", "documented", "the organization's quotas: documented (Scaleway's defaults, payment method validated), identity (identity validated too), or none (raised: 1000 of each)")
			fs.StringVar(&quota, "quota", "", "quotas to set over -quotas, as NAME=N,NAME=N (e.g. instance_servers_play2_nano=10,EM_A116X_SSD=3)")
			fs.IntVar(&rescuePort, "rescue-port", 2222, "SSH port of the worker's rescue system")
			fs.StringVar(&s3, "s3", "auto", "bucket backend: auto (versitygw when installed), versitygw, file")
			fs.StringVar(&s3Deletes, "s3-delete-conditions", "", "what the S3 stand-in does with a conditional DeleteObject: ignored, rejected (501), honoured (generic S3); the same as --reading delete-conditions=…")
			fs.Func("reading", "ID=VALUE: how the stand-ins answer where no source settles it, one row of the assumptions register (repeatable; --readings lists them; docs/assumptions.md)",
				func(v string) error { readings = append(readings, v); return nil })
			fs.BoolVar(&listReadings, "readings", false, "list the assumptions register's rows and the readings the stand-ins play, then exit")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			if listReadings {
				fmt.Fprint(a.stdout, assume.Listing())
				return nil
			}
			if s3Deletes != "" {
				readings = append(readings, assume.DeleteConditions+"="+s3Deletes)
			}
			rs, err := assume.Parse(readings...)
			if err != nil {
				return err
			}
			if dir == "" {
				d, err := os.MkdirTemp("", "pocbot-sim-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			opts := world.Options{Dir: dir, TimeFactor: timeFactor, S3: s3, RescuePort: rescuePort, Log: a.log, Readings: rs,
				Faults: scwsim.Faults{Seed: int64(faultSeed), Rate5xx: faultRate / 2, Rate429: faultRate / 2}}
			if quotaInstances > 0 {
				opts.Quotas = map[string]int{"instances": quotaInstances}
			}
			if opts.OrgQuotas, err = simQuotas(quotas, quota); err != nil {
				return err
			}
			w, err := world.Start(ctx, opts)
			if err != nil {
				return err
			}
			defer w.Close()
			if len(rs) > 0 {
				fmt.Fprintf(a.stdout, "# readings of the assumptions register: %s (the rest play their defaults)\n", rs)
			}
			for _, kv := range w.Env() {
				fmt.Fprintf(a.stdout, "export %s=%s\n", kv[0], shellQuote(kv[1]))
			}
			fmt.Fprintf(a.stdout, "# the organization owner's Scaleway key, for `bot init --iam` by hand (the variables above are the bot's key):\n"+
				"#   SCW_ACCESS_KEY=%s SCW_SECRET_KEY=%s\n", w.AdminAccessKey, w.AdminSecretKey)
			// A repository and its admin's token, so that `bot init --repo acme/shop` and
			// `bot doctor --repo acme/shop` can be tried by hand against the stand-in.
			w.GitHub.AddRepo(simRepo, "main")
			w.GitHub.SetPermission(simRepo, simAdmin, "admin")
			fmt.Fprintf(a.stdout, "# %s's token: an admin of %s\nexport GH_TOKEN=%s\n", simAdmin, simRepo, shellQuote(w.GitHub.AddUserToken(simAdmin)))
			keyFile, err := simUserKey(w, dir, simAdmin)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "# %s's SSH key on GitHub, to which the bot encrypts her kubeconfig (age -d -i %s)\n", simAdmin, keyFile)
			// GitHub Actions: a /poc comment on a repository whose default branch has the workflow
			// (once init's pull request is merged) runs `bot handle` with the secrets init wrote.
			runner, err := simRunner(a, w, dir)
			if err != nil {
				return err
			}
			go runner.Watch(ctx)
			fmt.Fprintln(a.stdout, "# ready")
			<-ctx.Done()
			return nil
		},
	}
}

// simUserKey gives login an SSH key on the GitHub stand-in and writes its private half to dir.
func simUserKey(w *world.World, dir, login string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("sim: make %s's SSH key: %w", login, err)
	}
	block, err := ssh.MarshalPrivateKey(priv, login+"@pocbot-sim")
	if err != nil {
		return "", fmt.Errorf("sim: encode %s's SSH key: %w", login, err)
	}
	path := filepath.Join(dir, login+"_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", fmt.Errorf("sim: write %s's SSH key: %w", login, err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("sim: encode %s's SSH public key: %w", login, err)
	}
	w.GitHub.AddUserKey(login, string(ssh.MarshalAuthorizedKey(sshPub)))
	return path, nil
}

// simRunner is the Actions stand-in of `bot sim`: its runs are this binary's `bot handle` (and a
// pull request job's `bot request-kubeconfig`), with
// the workflow's values, the world's endpoints and the shell's PATH, HOME and TMPDIR; it logs to
// stderr.
func simRunner(a *app, w *world.World, dir string) (*actions.Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sim: find this binary for the workflow runs: %w", err)
	}
	events := filepath.Join(dir, "actions")
	if err := os.MkdirAll(events, 0o700); err != nil {
		return nil, fmt.Errorf("sim: make the directory of the workflow runs' events: %w (is --dir writable?)", err)
	}
	run := func(command string) func(ctx context.Context, env []string) ([]byte, error) {
		return func(ctx context.Context, env []string) ([]byte, error) {
			cmd := exec.CommandContext(ctx, exe, command)
			cmd.Env = env
			for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
				if v, ok := os.LookupEnv(k); ok {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			return cmd.CombinedOutput()
		}
	}
	// A pull request's job (the Action's command: kubeconfig) runs request-kubeconfig; the bot's
	// runs, for comments and for that job's repository_dispatch, run handle.
	return &actions.Runner{GitHub: w.GitHub, Base: w.Endpoints(), Dir: events, Log: a.stderr,
		Handle: run("handle"), Request: run("request-kubeconfig")}, nil
}

// simQuotas is the organization's quotas of `bot sim`: a documented set, then NAME=N overrides.
func simQuotas(set, overrides string) (map[string]int, error) {
	var q map[string]int
	switch set {
	case "documented":
		q = scwsim.DocumentedQuotas()
	case "identity":
		q = scwsim.IdentityValidatedQuotas()
	case "none":
		q = map[string]int{}
	default:
		return nil, fmt.Errorf("-quotas %q: want documented, identity or none", set)
	}
	for _, kv := range strings.Split(overrides, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		name, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil || n < 0 || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("-quota %q: want NAME=N with N a count, like instance_servers_play2_nano=10", kv)
		}
		q[strings.TrimSpace(name)] = n
	}
	if set == "none" && len(q) == 0 {
		return nil, nil
	}
	return q, nil
}

// The repository `bot sim` seeds, and its admin.
const (
	simRepo  = "acme/shop"
	simAdmin = "ada"
)

// shellQuote quotes for POSIX shells; values are single-line (keys go to files).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
