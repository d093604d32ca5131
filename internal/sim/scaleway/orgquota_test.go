package scaleway

import (
	"errors"
	"testing"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// The documented default quotas, as IAM lists them and as every create is held to them: the
// sixth PLAY2-NANO and the second server of an Elastic Metal offer are refused, naming the quota.
func TestDocumentedQuotas(t *testing.T) {
	clk := newClock()
	_, c, _ := startEmu(t, Options{Clock: clk.Now, OrgQuotas: DocumentedQuotas()})
	ia := iam.NewAPI(c)
	if _, err := ia.ListQuota(&iam.ListQuotaRequest{}); err == nil {
		t.Error("a quota list without organization_id was answered")
	}
	list, err := ia.ListQuota(&iam.ListQuotaRequest{OrganizationID: testProject, QuotumNames: []string{InstanceTypeQuota("PLAY2-NANO"), "EM_A116X_SSD"}})
	if err != nil || len(list.Quota) != 2 {
		t.Fatalf("list quota: %v %+v", err, list)
	}
	for _, q := range list.Quota {
		want := map[string]uint64{InstanceTypeQuota("PLAY2-NANO"): 5, "EM_A116X_SSD": 1}[q.Name]
		if len(q.Limits) != 1 || q.Limits[0].Limit == nil || *q.Limits[0].Limit != want {
			t.Errorf("quotum %s: %+v, want limit %d", q.Name, q.Limits, want)
		}
	}
	if _, err := ia.GetQuotum(&iam.GetQuotumRequest{QuotumName: "no_such_quota", OrganizationID: testProject}); err == nil {
		t.Error("an unknown quotum was answered")
	}

	inst := instance.NewAPI(c)
	var qe *scw.QuotasExceededError
	for i := range 6 {
		_, err := inst.CreateServer(&instance.CreateServerRequest{Zone: zone, Name: "s", CommercialType: "PLAY2-NANO"})
		if i < 5 && err != nil {
			t.Fatalf("PLAY2-NANO %d: %v", i+1, err)
		}
		if i == 5 && (!errors.As(err, &qe) || qe.Details[0].Resource != InstanceTypeQuota("PLAY2-NANO")) {
			t.Fatalf("6th PLAY2-NANO: %v, want quotas_exceeded on %s", err, InstanceTypeQuota("PLAY2-NANO"))
		}
	}
	bm := baremetal.NewAPI(c)
	a116 := offerNamed(t, bm, zone, "EM-A116X-SSD")
	if a116 == nil || a116.QuotaName != "EM_A116X_SSD" {
		t.Fatalf("offer EM-A116X-SSD: %+v", a116)
	}
	for i := range 2 {
		_, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: zone, OfferID: a116.ID, Name: "w", Description: "d"})
		if i == 0 && err != nil {
			t.Fatalf("first Elastic Metal server: %v", err)
		}
		if i == 1 && (!errors.As(err, &qe) || qe.Details[0].Resource != a116.QuotaName) {
			t.Fatalf("second Elastic Metal server of the offer: %v, want quotas_exceeded on %s", err, a116.QuotaName)
		}
	}
}
