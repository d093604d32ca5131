package scaleway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/preflight"
)

// Organization quotas: the limits Scaleway applies per organization to the products pocbot
// creates, by quota name, and the IAM endpoints that list them (GET /iam/v1alpha1/quota and
// /quota/{name}, scaleway-sdk-go v1.39.0 api/iam/v1alpha1 ListQuota, GetQuotum). The values
// are docs-content pages/organizations-and-projects/additional-content/organization-quotas.mdx
// (https://www.scaleway.com/en/docs/organizations-and-projects/additional-content/organization-quotas/),
// column "payment method validated". The API's names of these quotas are not documented;
// those below are the emulator's (contract table), the Elastic Metal ones excepted: an offer
// names its own (Offer.QuotaName).
const (
	// QuotaIPs caps the Instance flexible IPs ("Instances IPs": 20).
	QuotaIPs = "instance_ips"
	// QuotaSecurityGroups caps the security groups ("Security Groups": 99 999).
	QuotaSecurityGroups = "security_groups"
	// QuotaVolumes caps the Block Storage volumes ("Volumes": 200).
	QuotaVolumes = "block_volumes"
	// QuotaSnapshots caps the snapshots ("Snapshots": 99 999).
	QuotaSnapshots = "block_snapshots"
	// QuotaSSHKeys caps the IAM SSH keys ("SSH keys allowed": 50).
	QuotaSSHKeys = "iam_ssh_keys"
)

// InstanceTypeQuota names the quota of one Instance commercial type ("PLAY2-NANO": 5).
func InstanceTypeQuota(commercialType string) string {
	return "instance_servers_" + strings.ToLower(strings.ReplaceAll(commercialType, "-", "_"))
}

// OfferQuota names the quota of an Elastic Metal offer, as its quota_name says.
func OfferQuota(offer string) string {
	return "EM_" + strings.ReplaceAll(strings.TrimPrefix(offer, "EM-"), "-", "_")
}

// DocumentedQuotas are Scaleway's default quotas of an organization with a validated payment
// method (preflight.Documented, the one table of them), under the emulator's names, for every
// product pocbot creates and the types and offers its tests use. The offer EM-A116X-SSD is not on
// the page: one, as preflight reads it.
func DocumentedQuotas() map[string]int {
	q := map[string]int{}
	for key, n := range preflight.Documented {
		q[quotaNameOf(key)] = int(n)
	}
	q[OfferQuota("EM-A116X-SSD")] = 1
	return q
}

// RaisedQuotas are an organization whose every quota Scaleway raised to n: what the worlds run
// many clusters under (the API lists them, so the pre-flight weighs them, not the documented
// defaults).
func RaisedQuotas(n int) map[string]int {
	q := DocumentedQuotas()
	for k := range q {
		q[k] = n
	}
	return q
}

// quotaNameOf is the emulator's name of the quota of a preflight key.
func quotaNameOf(key string) string {
	switch key {
	case preflight.KeyIPs:
		return QuotaIPs
	case preflight.KeyVolumes:
		return QuotaVolumes
	case preflight.KeySnapshots:
		return QuotaSnapshots
	case preflight.KeySecurityGroups:
		return QuotaSecurityGroups
	case preflight.KeySSHKeys:
		return QuotaSSHKeys
	}
	if preflight.IsOfferKey(key) {
		return OfferQuota(key)
	}
	return InstanceTypeQuota(key)
}

// prettyName is a quota's pretty name as the quotas page titles it ("PLAY2-NANO", "Instances
// IPs", "Volumes", "A116X SSD").
func prettyName(name string) string {
	switch name {
	case QuotaIPs:
		return "Instances IPs"
	case QuotaVolumes:
		return "Volumes"
	case QuotaSnapshots:
		return "Snapshots"
	case QuotaSecurityGroups:
		return "Security Groups"
	case QuotaSSHKeys:
		return "SSH keys allowed"
	}
	if t, ok := strings.CutPrefix(name, "instance_servers_"); ok {
		return strings.ToUpper(strings.ReplaceAll(t, "_", "-"))
	}
	if o, ok := strings.CutPrefix(name, "EM_"); ok {
		return strings.ReplaceAll(o, "_", " ")
	}
	return name
}

// IdentityValidatedQuotas are the page's second column ("payment method and identity
// validated"): what an organization has once it asks for more (PLAY2-NANO 10, Elastic Metal
// offers 2 or 3).
func IdentityValidatedQuotas() map[string]int {
	q := DocumentedQuotas()
	q[InstanceTypeQuota("PLAY2-NANO")] = 10
	q[InstanceTypeQuota("PLAY2-PICO")] = 15
	q[InstanceTypeQuota("PLAY2-MICRO")] = 5
	q[InstanceTypeQuota("DEV1-S")] = 20
	q[QuotaIPs] = 50
	q[QuotaVolumes] = 5000
	q[OfferQuota("EM-A116X-SSD")] = 3
	q[OfferQuota("EM-A115X-SSD")] = 3
	q[OfferQuota("EM-B112X-SSD")] = 2
	q[OfferQuota("EM-I215E-NVME")] = 2
	return q
}

// orgQuota checks organization quota name against current (caller holds e.mu), as quotaLeft.
func (e *Emulator) orgQuota(w http.ResponseWriter, name string, current int) bool {
	return quotaLeft(w, e.opts.OrgQuotas, name, current)
}

// quotumJSON is one quota as the API lists it, under the name register row quota-names plays:
// snake (the emulator's names), pretty (an opaque name, the product in pretty_name only).
func (e *Emulator) quotumJSON(name string, limit int) map[string]any {
	l := uint64(max(limit, 0))
	g := true
	shown := name
	if e.opts.Readings.Is(assume.QuotaNames, "pretty") && !strings.HasPrefix(name, "EM_") {
		sum := sha256.Sum256([]byte(name))
		shown = "quota-" + hex.EncodeToString(sum[:6])
	}
	return reshape(&iam.Quotum{Name: shown, Limit: &l, PrettyName: prettyName(name), Unit: "resource", LocalityType: iam.LocalityTypeGlobal,
		Limits: []*iam.QuotumLimit{{Global: &g, Limit: &l}}, Description: prettyName(name) + " per organization"}, []string{"srn"}, nil)
}

// listedQuota tells whether ListQuota lists the quota name: under quota-names=absent only the
// Elastic Metal offers' quotas (their documented quota_name) are.
func (e *Emulator) listedQuota(name string) bool {
	return !e.opts.Readings.Is(assume.QuotaNames, "absent") || strings.HasPrefix(name, "EM_")
}

// listQuota answers GET /iam/v1alpha1/quota: organization_id is required (source silent: the
// stricter reading), quotum_names filters, one page of every quota the options set.
func (e *Emulator) listQuota(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("organization_id") == "" {
		invalidArg(w, "organization_id", "organization_id is required")
		return
	}
	want := map[string]bool{}
	for _, v := range q["quotum_names"] {
		for _, n := range strings.Split(v, ",") {
			if n != "" {
				want[n] = true
			}
		}
	}
	var names []string
	for n := range e.opts.OrgQuotas {
		if (len(want) == 0 || want[n]) && e.listedQuota(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := []any{}
	for _, n := range names {
		out = append(out, e.quotumJSON(n, e.opts.OrgQuotas[n]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"quota": out, "total_count": len(out)})
}

// getQuotum answers GET /iam/v1alpha1/quota/{name}: 404 for a quota the options do not set.
func (e *Emulator) getQuotum(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	limit, ok := e.opts.OrgQuotas[name]
	if !ok || !e.listedQuota(name) {
		blockNotFound(w, "quotum", name)
		return
	}
	writeJSON(w, http.StatusOK, e.quotumJSON(name, limit))
}
