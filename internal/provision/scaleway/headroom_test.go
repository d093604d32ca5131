package scaleway

import (
	"testing"

	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// The quota names the bot looks up are the ones the emulator lists (undocumented by Scaleway:
// one reading, kept in step here).
func TestQuotaNamesMatchTheEmulator(t *testing.T) {
	for bot, emu := range map[string]string{
		QuotaIPs: scwsim.QuotaIPs, QuotaSecurityGroups: scwsim.QuotaSecurityGroups, QuotaVolumes: scwsim.QuotaVolumes,
		QuotaSnapshots: scwsim.QuotaSnapshots, QuotaSSHKeys: scwsim.QuotaSSHKeys,
		InstanceTypeQuota("PLAY2-NANO"): scwsim.InstanceTypeQuota("PLAY2-NANO"),
	} {
		if bot != emu {
			t.Errorf("the bot reads quota %q, the emulator lists %q", bot, emu)
		}
	}
}

// Headroom after one seed cluster under the documented quotas: the usage it counts and the
// needs of a second cluster (everything) and of the first one's rerun (nothing).
func TestHeadroomCountsUsageAndNeeds(t *testing.T) {
	ctx := t.Context()
	w := newWorld(t, scwsim.Options{OrgQuotas: scwsim.DocumentedQuotas()})
	// the driver of newWorld has no organization: give it the project's, as the emulator accepts any.
	w.drv.org = testProject
	spec := testSpec("")
	st, _ := provision.NewState("h-1", spec)
	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	in, err := w.drv.Headroom(ctx, spec, nil, []string{spec.BaremetalOffer})
	if err != nil {
		t.Fatal(err)
	}
	nano := InstanceTypeQuota(spec.CPInstanceType)
	if in.Usage[nano] != 3 || in.Usage[QuotaIPs] != 3 || in.Usage[QuotaVolumes] != 3 || in.Usage["EM_A116X_SSD"] != 1 {
		t.Errorf("usage %v", in.Usage)
	}
	if q := in.Quotas[nano]; q.Limit != 5 || q.Unlimited {
		t.Errorf("quota %s = %+v", nano, q)
	}
	if len(in.Offers) != 1 || in.Offers[0].QuotaName != "EM_A116X_SSD" || in.Offers[0].Stock == "" {
		t.Errorf("offers %+v", in.Offers)
	}
	in.Offers[0].Priced = true
	if res := preflight.Decide(in); res.Refusal == nil || res.Refusal.Check.Quota != nano {
		t.Errorf("a second cluster: %+v, want refused on %s", res.Refusal, nano)
	}
	rerun, err := w.drv.Headroom(ctx, spec, st, []string{spec.BaremetalOffer})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rerun.Needs {
		if n.Count != 0 {
			t.Errorf("the rerun of a complete cluster needs %d %s", n.Count, n.What)
		}
	}
	if len(rerun.Offers) != 0 {
		t.Errorf("the rerun weighs offers %+v although its worker exists", rerun.Offers)
	}
}
