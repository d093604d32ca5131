package reaper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/reaper"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// BenchmarkDecisionPass1000 is one reaper pass over 1,000 state headers (documents written
// with Put, no cluster behind them, none expired nor in the warning window), on file:// and on
// versitygw, without GitHub (an operator's reap) and with it (one issue look-up per header on
// the GitHub stand-in). The orphan pass runs too (the emulator has nothing tagged).
func BenchmarkDecisionPass1000(b *testing.B) {
	for _, s3 := range []string{"file", "versitygw"} {
		b.Run(s3, func(b *testing.B) {
			e := newEnv(b, s3)
			now := time.Now().UTC()
			t0 := time.Now()
			for i := range 1000 {
				n := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc"})
				e.putDoc(b, statestore.Header{Cluster: fmt.Sprintf("acme-shop-%04d", i), Repository: repo, Number: n,
					Kind: "issue", RequestedBy: "alice", Expires: now.Add(time.Duration(3+i%100) * time.Hour)})
			}
			b.Logf("%s: 1000 documents written in %s", s3, time.Since(t0).Round(time.Millisecond))
			for _, withGitHub := range []bool{false, true} {
				name := "operator"
				if withGitHub {
					name = "github"
				}
				b.Run(name, func(b *testing.B) {
					ctx := ctxFor(b, 5*time.Minute)
					cfg := e.config(now)
					if !withGitHub {
						cfg.Issues, cfg.Repository = nil, ""
					}
					for b.Loop() {
						t := time.Now()
						rep, err := reaper.Run(ctx, cfg)
						if err != nil {
							b.Fatal(err)
						}
						if rep.Listed != 1000 || rep.Count(reaper.ActionNone) != 1000 {
							b.Fatalf("listed %d, %d without action; want 1000, 1000", rep.Listed, rep.Count(reaper.ActionNone))
						}
						b.Logf("%s/%s: pass over 1000 headers in %s", s3, name, time.Since(t).Round(time.Millisecond))
					}
				})
			}
		})
	}
}
