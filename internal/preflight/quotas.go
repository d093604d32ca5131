package preflight

import (
	"slices"
	"strings"
	"unicode"

	"github.com/pocbot/pocbot/internal/settings"
)

// The quota keys of products, as .github/poc.yml's `quotas:` writes them (the settings table's).
// An Instance commercial type ("PLAY2-NANO") and an Elastic Metal offer ("EM-A116X-SSD") are keys
// of their own.
const (
	KeyIPs            = settings.QuotaKeyIPs
	KeyVolumes        = settings.QuotaKeyVolumes
	KeySnapshots      = settings.QuotaKeySnapshots
	KeySecurityGroups = settings.QuotaKeySecurityGroups
	KeySSHKeys        = settings.QuotaKeySSHKeys
)

// Listed is one quota as IAM ListQuota lists it, with its limit where the cluster goes (the
// zone's, else the region's, else the global one).
type Listed struct {
	Name, PrettyName string
	Limit            int64
	Unlimited        bool
}

// Source is where a quota's number comes from.
type Source string

// Sources of a quota, best first.
const (
	FromAPI     Source = "api"        // the organization's quota, listed by IAM
	FromRepo    Source = "repo"       // .github/poc.yml quotas:
	FromDocs    Source = "documented" // Scaleway's documented default
	FromNowhere Source = "unknown"    // none: not checked (the API still refuses what exceeds it)
)

// QuotasPage is where Scaleway lists the default quotas and how to raise them.
const QuotasPage = "https://www.scaleway.com/en/docs/organizations-and-projects/additional-content/organization-quotas/"

// Documented are Scaleway's default quotas of an organization whose payment method is validated,
// for what pocbot creates, by key: docs-content
// pages/organizations-and-projects/additional-content/organization-quotas.mdx (Instances,
// Storage, Network, SSH keys and Elastic Metal tables, first column). Instance types and offers
// the page gives only to a validated identity are left out (unknown: not checked).
var Documented = map[string]int64{
	"DEV1-S": 10, "DEV1-M": 8, "DEV1-L": 5,
	"PLAY2-PICO": 10, "PLAY2-NANO": 5, "PLAY2-MICRO": 3,
	"GP1-XS": 1, "PRO2-XXS": 1, "ENT1-XXS": 1, "POP2-2C-8G": 1, "POP2-HC-2C-4G": 1, "POP2-HM-2C-16G": 1,
	KeyIPs: 20, KeyVolumes: 200, KeySnapshots: 99999, KeySecurityGroups: 99999, KeySSHKeys: 50,
	"EM-A115X-SSD": 1, "EM-A210R-SATA": 1, "EM-A310X-SSD": 1, "EM-A315X-SSD": 1, "EM-B111X-SATA": 1, "EM-B112X-SSD": 1,
	"EM-I220E-NVME": 2, "EM-I320E-NVME": 1, "EM-L101X-SATA": 1, "EM-I215E-NVME": 0,
}

// documented is a key's documented default. An Elastic Metal offer the page does not list
// (EM-A116X-SSD, the seed's) gets one, as every listed offer of its range: the stricter reading
// of "one server of each offer".
func documented(key string) (int64, string, bool) {
	if n, ok := Documented[key]; ok {
		return n, "Scaleway's documented default (payment method validated)", true
	}
	if IsOfferKey(key) {
		return 1, "Scaleway's documented default for an Elastic Metal offer (one each; this offer is not on the page)", true
	}
	return 0, "", false
}

// IsOfferKey tells whether key names an Elastic Metal offer ("EM-…").
func IsOfferKey(key string) bool { return strings.HasPrefix(key, "EM-") }

// words splits a quota's name or pretty name into lower-case words at every character that is
// not a letter or a digit: "instance_servers_play2_nano", "PLAY2-NANO Instances".
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// productWords says how a product's quota reads: all the words of one of its alternatives, and
// none of the words of a neighbour's quota (Elastic Metal's flexible IPs, Block Storage's size, a
// database's snapshots…).
var productWords = map[string]struct {
	anyOf [][]string
	none  []string
}{
	KeyIPs: {anyOf: [][]string{{"ip"}, {"ips"}, {"flexibleip"}, {"flexibleips"}},
		none: []string{"elastic", "metal", "baremetal", "em", "lb", "load", "balancer", "gateway", "gateways", "private", "ipv6", "ipam", "database", "rdb"}},
	KeyVolumes: {anyOf: [][]string{{"volume"}, {"volumes"}},
		none: []string{"snapshot", "snapshots", "size", "gb", "local", "file", "database", "rdb", "backup", "backups", "per"}},
	KeySnapshots: {anyOf: [][]string{{"snapshot"}, {"snapshots"}}, none: []string{"database", "rdb", "per", "volume"}},
	KeySecurityGroups: {anyOf: [][]string{{"security", "group"}, {"security", "groups"}, {"securitygroup"}, {"securitygroups"}},
		none: []string{"rule", "rules", "placement"}},
	KeySSHKeys: {anyOf: [][]string{{"ssh", "key"}, {"ssh", "keys"}, {"sshkey"}, {"sshkeys"}}, none: []string{"api"}},
}

// matches tells whether a quota's words say it counts key: a product's words, or the words of a
// commercial type or offer in a row ("play2", "nano"), or glued ("play2nano"); a type's quota
// must not count another thing of that type (its snapshots, its IPs, its images).
func matches(key string, ws []string) bool {
	has := func(w string) bool { return slices.Contains(ws, w) }
	if p, ok := productWords[key]; ok {
		if slices.ContainsFunc(p.none, has) {
			return false
		}
		return slices.ContainsFunc(p.anyOf, func(alt []string) bool { return !slices.ContainsFunc(alt, func(w string) bool { return !has(w) }) })
	}
	kw := words(strings.TrimPrefix(key, "EM-"))
	if len(kw) == 0 {
		return false
	}
	if slices.ContainsFunc(ws, func(w string) bool {
		return slices.Contains([]string{"snapshot", "snapshots", "volume", "volumes", "ip", "ips", "image", "images"}, w)
	}) {
		return false
	}
	glued := strings.Join(kw, "")
	for i := range ws {
		if ws[i] == glued || i+len(kw) <= len(ws) && slices.Equal(ws[i:i+len(kw)], kw) {
			return true
		}
	}
	return false
}

// Match finds the listed quota of key: the one named quotaName when given (a documented name:
// the offer's quota_name), else every quota whose name or pretty name says it counts key. Several
// matches weigh the smallest limit (the stricter reading); names lists them all.
func Match(key, quotaName string, listed []Listed) (q Listed, names []string, byPretty, ok bool) {
	if quotaName != "" {
		for _, l := range listed {
			if l.Name == quotaName {
				return l, []string{l.Name}, false, true
			}
		}
	}
	for _, l := range listed {
		byName := matches(key, words(l.Name))
		if !byName && !matches(key, words(l.PrettyName)) {
			continue
		}
		names = append(names, l.Name)
		if !ok || tighter(l, q) {
			q, byPretty = l, !byName
		}
		ok = true
	}
	return q, names, byPretty, ok
}

func tighter(a, b Listed) bool {
	switch {
	case a.Unlimited:
		return false
	case b.Unlimited:
		return true
	}
	return a.Limit < b.Limit
}
