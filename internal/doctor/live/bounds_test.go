package live

import (
	"context"
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// A run ends within its bound whatever its probes do: a probe that hangs is cut at its share,
// its removal still gets a context of its own (live, bounded), and the probes after it run.
func TestRunIsBoundedWhateverHangs(t *testing.T) {
	emu := scwsim.New(scwsim.Options{SecretKey: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"})
	url, stop, err := emu.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWAAAAAAAAAAAAAAAAA", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"),
		scw.WithDefaultProjectID("11111111-2222-4333-8444-555555555555"), scw.WithDefaultZone(scw.ZoneFrPar1))
	if err != nil {
		t.Fatal(err)
	}
	b := bounds{run: 2 * time.Second, probe: 300 * time.Millisecond, cleanup: 200 * time.Millisecond}
	var cleanupLive bool
	var cleanupLeft time.Duration
	hang := func(ctx context.Context, cfg Config) Finding {
		<-ctx.Done()
		cctx, cancel := cfg.cleanupContext(ctx)
		defer cancel()
		d, ok := cctx.Deadline()
		cleanupLive, cleanupLeft = cctx.Err() == nil, time.Until(d)
		if !ok {
			cleanupLeft = -1
		}
		return Finding{Err: ctx.Err()}
	}
	ran := 0
	quick := func(context.Context, Config) Finding { ran++; return Finding{Reading: "allowed"} }
	var probes []probe
	for range 10 { // ten hung probes: 3 s of shares, over the run's bound
		probes = append(probes, probe{assume.QuotaRead, hang})
	}
	probes = append(probes, probe{assume.QuotaRead, quick})
	cfg := Config{Scaleway: client, Project: "11111111-2222-4333-8444-555555555555", Zone: scw.ZoneFrPar1,
		probesForTest: probes, bounds: b}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	rep := Run(ctx, cfg)
	took := time.Since(start)
	if took > b.run+100*time.Millisecond {
		t.Errorf("the run took %s, over its bound %s", took, b.run)
	}
	if !cleanupLive || cleanupLeft <= 0 || cleanupLeft > b.cleanup {
		t.Errorf("a cut probe's removal context: live %v, %s left; want live, at most %s", cleanupLive, cleanupLeft, b.cleanup)
	}
	if len(rep.Results) != len(probes) || rep.Results[0].Err == nil || rep.Results[0].Status() != Failed {
		t.Errorf("results %+v: want every probe's, the hung ones failed", rep.Results)
	}
	if last := rep.Results[len(rep.Results)-1]; ran != 1 || last.Reading != "allowed" {
		t.Errorf("the probe after the hung ones: ran %d times, found %+v", ran, last.Finding)
	}
}
