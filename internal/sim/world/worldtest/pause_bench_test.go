package worldtest_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// resumeWaits is a resume's profile: what a pause kept (IPs, security group and rules, SSH keys,
// the shared image, DNS, the secrets) is there already and waits for nothing.
func resumeWaits(w cluster.Waits, spec provision.Spec) func(string) time.Duration {
	kept := []string{scaleway.NodeSSHKey, scaleway.NodePersonKey, scaleway.NodeSecGroup, scaleway.NodeSecRules, scaleway.NodeSnapshot,
		scaleway.NodeDNS, cluster.NodeImageObject, cluster.NodeTalosSecrets}
	for i := range spec.CPCount {
		kept = append(kept, scaleway.NodeIP(i))
	}
	return func(n string) time.Duration {
		if slices.Contains(kept, n) {
			return 0
		}
		return w.Of(n)
	}
}

// BenchmarkPauseResume measures a pause (snapshot into the bucket, machines deleted; the worker
// parked or deleted) and the resume that follows (machines again, etcd recovered; the parked
// worker adopted, or a new one ordered) on the emulated world at factor POC_BENCH_FACTOR, each
// against the critical-path bound of the same profile (goal: ratio <= 1.05): the pause's is the
// snapshot's then the machines' down (cluster.Waits.Pause), the resume's the graph's critical
// path with the restore between the bootstrap and /readyz (Waits.Resume). Both run as the bot
// runs them, clusterops' Pause and Up: the cluster's lock, the state saved (encrypted) at every
// record, the phases, the prices; none of that is in the bound. Each line also gives the excess
// over the bound, the CPU the process spent (ours and the stand-ins') and the load average,
// which a shared machine's ratios depend on. That fixed work does not scale with the factor:
// at the default 0.01 the cold pause's 210-ms bound meets a hundred-odd milliseconds of it (the
// lock, the saves, the snapshot's encrypted write and read-back, loopback calls), a ratio of
// 1.5 that is 1.007 at factor 1; POC_BENCH_FACTOR=0.1 (about 3 minutes) gives the goal's ratio.
// It prints the resume modeled at factor 1 (goals: <= 8 min cold, <= 4 min
// with a parked worker), its critical chain step by step, and the cold resume's floor
// (logResumeChain); POC_BENCH_TRACE=1 prints every step's start and end on stderr.
func BenchmarkPauseResume(b *testing.B) {
	factor := benchFactor(b)
	hosts := world.DefaultHosts()
	waits := worldtest.Waits(scwsim.DefaultLatency(), hosts)
	waits.SharedImage, waits.Resume = true, true
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }
	for i := 0; i < b.N; i++ {
		p, _ := benchParts(b, factor, hosts)
		var t0 time.Time
		trace := os.Getenv("POC_BENCH_TRACE") != ""
		progress := provision.ProgressFunc(func(e provision.Event) {
			if trace {
				fmt.Fprintf(os.Stderr, "%8v %-22s %s %s\n", time.Since(t0).Round(time.Millisecond), e.Step, e.Phase, e.Detail)
			}
		})
		g := provision.NewGraph()
		if err := p.Ops.Build(g, p.Spec); err != nil {
			b.Fatal(err)
		}
		ctx := b.Context()
		name := fmt.Sprintf("bench-pause-%d", i)
		t0 = time.Now()
		if _, err := p.Ops.Run(ctx, clusterops.VerbUp, clusterops.Intent{Cluster: name, Spec: p.Spec, TTL: time.Hour, RequestedBy: "bench", Command: "up"}, clusterops.Steps(progress)); err != nil {
			b.Fatal(err)
		}
		parked := waits
		parked.Parked = true
		measure := func(what string, bound time.Duration, run func() error) {
			cpu0, load := cpuTime(), loadAverage()
			t0 = time.Now()
			if err := run(); err != nil {
				b.Fatalf("%s: %v", what, err)
			}
			wall, lb, cpu := time.Since(t0), scale(bound), cpuTime()-cpu0
			b.ReportMetric(float64(wall)/float64(lb), what+"/bound")
			b.Logf("factor %.3g: %-14s %8v (bound %8v, ratio %.3f, excess %v; CPU %v, load %s)", factor, what, wall.Round(time.Millisecond), lb,
				float64(wall)/float64(lb), (wall - lb).Round(time.Millisecond), cpu.Round(time.Millisecond), load)
		}
		for _, park := range []bool{false, true} {
			kind, rw, parkFor := "cold", waits, time.Duration(0)
			if park {
				kind, rw, parkFor = "parked", parked, time.Hour
			}
			measure("pause-"+kind, waits.Pause(park), func() error {
				out, err := p.Ops.Run(ctx, clusterops.VerbPause, clusterops.Intent{Cluster: name, RequestedBy: "bench", Command: "pause", ParkFor: parkFor}, clusterops.Steps(progress))
				if err == nil && out.State.Outputs[cluster.OutEtcdSnapshot] == "" {
					err = errors.New("no snapshot recorded by the pause")
				}
				return err
			})
			measure("resume-"+kind, g.CriticalPath(resumeWaits(rw, p.Spec)), func() error {
				_, err := p.Ops.Run(ctx, clusterops.VerbUp, clusterops.Intent{Cluster: name, Spec: p.Spec, RequestedBy: "bench", Command: "resume"}, clusterops.Steps(progress))
				return err
			})
			if i == 0 {
				logResumeChain(b, g, rw, p.Spec, kind)
			}
		}
	}
}

// cpuTime is the CPU time this process has used so far (user and system; the stand-ins run in
// it too).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's one-minute load average (Linux), or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// logResumeChain prints (to stdout, as logModeled) a resume's modeled minutes at factor 1 and
// its critical chain, step by step: the waits that can only come one after the other. The cold
// resume's line also gives its floor, what the new Elastic Metal worker waits for before a byte
// of its image can be written (the delivery, recorded, then the reboot into rescue and the
// rescue system's boot); it is reported as resume-cold-floor-min.
func logResumeChain(b *testing.B, g *provision.Graph, w cluster.Waits, spec provision.Spec, name string) {
	of := resumeWaits(w, spec)
	m := g.CriticalPath(of)
	goal := map[string]float64{"cold": 8, "parked": 4}[name]
	b.ReportMetric(m.Minutes(), "resume-"+name+"-modeled-min")
	fmt.Printf("%-32s %6.2f min (modeled, factor 1; goal %.0f)\n", "resume, "+name+" worker", m.Minutes(), goal)
	var steps []string
	for _, s := range g.CriticalChain(of) {
		if s.Wait == 0 {
			continue
		}
		step := fmt.Sprintf("%s %v", s.Node, s.Wait)
		switch s.Node {
		case cluster.NodeBootstrap:
			step += fmt.Sprintf(" (Talos boot %v, runtime and time sync %v, etcd restore %v, API /readyz %v)", w.TalosBoot, w.TalosReady, w.EtcdRestore, w.KubeReady)
		case cluster.NodeWorkerImage:
			step += fmt.Sprintf(" (reboot into rescue %v, rescue boot %v, image write %v, reboot to disk %v)", w.RescueReboot, w.RescueBoot, w.ImageWrite, w.NormalReboot)
		case cluster.NodeWorkerConfig:
			if !w.Parked {
				step += fmt.Sprintf(" (Talos boot %v, apply and reboot %v)", w.TalosBoot, w.ApplyReboot)
			}
		case cluster.NodeClusterReady:
			step += " (agents, nodes, DNS, routing; then the pod-network probe)"
		}
		steps = append(steps, step)
	}
	fmt.Printf("  critical chain (steps that wait): %s\n", strings.Join(steps, " → "))
	if !w.Parked {
		floor := w.Scaleway.BMDelivery + w.RescueReboot + w.RescueBoot
		b.ReportMetric(floor.Minutes(), "resume-cold-floor-min")
		fmt.Printf("  floor: Elastic Metal delivery %v (recorded) + reboot into rescue %v + rescue boot %v = %.2f min before the image is written\n",
			w.Scaleway.BMDelivery, w.RescueReboot, w.RescueBoot, floor.Minutes())
	}
}
