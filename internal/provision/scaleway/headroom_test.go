package scaleway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/assume"

	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// Under every reading of register rows quota-names and quota-read, Headroom hands the
// pre-flight what the API said: the quotas it lists (found by what they count), or none and why.
// The decision under each is preflight's table (TestSecondClusterRefusedUnderEveryQuotaReading);
// here the wire.
func TestHeadroomUnderEveryQuotaReading(t *testing.T) {
	t.Parallel()
	spec := testSpec("")
	for _, tc := range []struct {
		reading   string // quota-names
		orgRule   bool   // the key holds OrganizationReadOnly on the organization (quota-read)
		source    preflight.Source
		unreadHas string
	}{
		{"snake", true, preflight.FromAPI, ""},
		{"pretty", true, preflight.FromAPI, ""},
		{"absent", true, preflight.FromDocs, ""},
		{"snake", false, preflight.FromDocs, "OrganizationReadOnly"},
	} {
		t.Run(fmt.Sprintf("%s, org rule %v", tc.reading, tc.orgRule), func(t *testing.T) {
			w := newWorld(t, scwsim.Options{OrgQuotas: scwsim.DocumentedQuotas(), Readings: assume.Readings{assume.QuotaNames: tc.reading}})
			// The bot's own IAM key, as deploy/iam makes it: the project's sets, and the
			// organization's read when the row says so.
			const access, secret = "SCWBOTKEY00000000000", "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
			w.emu.AddAPIKey(access, secret, "pocbot", testProject, PermissionSetNames()...)
			if tc.orgRule {
				w.emu.GrantOrganization(access, "pocbot-organization", testOrg, OrganizationPermissionSetNames()...)
			}
			drv := w.driverWithKey(t, access, secret, testOrg)
			in, err := drv.Headroom(t.Context(), spec, nil, []string{spec.BaremetalOffer})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(in.Unread, tc.unreadHas) || (tc.unreadHas == "") != (in.Unread == "") {
				t.Errorf("unread %q, want it to say %q", in.Unread, tc.unreadHas)
			}
			in.Offers[0].Priced = true
			res := preflight.Decide(in)
			for _, c := range res.Checks {
				if c.Key == spec.CPInstanceType && (c.Source != tc.source || c.Limit != 5) {
					t.Errorf("%s weighed at %d from %s (%s), want 5 from %s", c.Key, c.Limit, c.Source, c.From(), tc.source)
				}
				if !c.Known() {
					t.Errorf("%s has no number: %s", c.Key, c.From())
				}
			}
			if c := res.Candidates[0].Check; c.Source != preflight.FromAPI && tc.orgRule {
				t.Errorf("the offer's quota came from %s, want its documented quota_name", c.From())
			}
		})
	}
}

// Headroom after one seed cluster under the documented quotas: the usage it counts and the
// needs of a second cluster (everything) and of the first one's rerun (nothing).
func TestHeadroomCountsUsageAndNeeds(t *testing.T) {
	t.Parallel()
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
	nano := spec.CPInstanceType
	if in.Usage[nano] != 3 || in.Usage[preflight.KeyIPs] != 3 || in.Usage[preflight.KeyVolumes] != 3 || in.Usage[spec.BaremetalOffer] != 1 {
		t.Errorf("usage %v", in.Usage)
	}
	if q, _, _, ok := preflight.Match(nano, "", in.Listed); !ok || q.Limit != 5 || q.Unlimited {
		t.Errorf("quota of %s = %+v", nano, q)
	}
	if len(in.Offers) != 1 || in.Offers[0].QuotaName != "EM_A116X_SSD" || in.Offers[0].Stock == "" {
		t.Errorf("offers %+v", in.Offers)
	}
	in.Offers[0].Priced = true
	if res := preflight.Decide(in); res.Refusal == nil || res.Refusal.Check.Key != nano {
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
