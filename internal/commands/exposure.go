package commands

import (
	"math/big"
	"net/netip"
	"slices"
)

// UsableKeyTypes names the SSH public keys the kubeconfig can be encrypted to: filippo.io/age's
// agessh.ParseRecipient (v1.3.2, agessh/agessh.go) accepts "ssh-ed25519" and "ssh-rsa" (and
// refuses RSA keys under 2048 bits); ecdsa and FIDO "sk-" keys have no age recipient.
const UsableKeyTypes = "`ssh-ed25519` or `ssh-rsa` (2048 bits or more)"

// wideExposure is "a /8's worth" in host units: 2^24 IPv4 addresses, or 2^24 IPv6 /64 subnets
// (a /40). Decision: an IPv6 /64 is one LAN (RFC 4291's 64-bit interface identifiers), the
// unit an IPv4 address is, so the IPv6 threshold is the same count of /64s. The two families
// add up (in host units): half of each threshold is together over it.
const wideExposureBits = 24

// OpenToWorld reports whether the admin CIDRs, together, let more than a /8's worth of
// addresses reach the Kubernetes and Talos APIs: the union of the prefixes is counted (a
// prefix inside another adds nothing), IPv4 in addresses, IPv6 in /64 subnets. An empty list is
// the cluster's default 0.0.0.0/0 (docs/seed.md); an unreadable entry counts as the whole world (fail loud).
func OpenToWorld(cidrs []string) bool {
	if len(cidrs) == 0 {
		return true
	}
	var v4, v6 []netip.Prefix
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			a, aerr := netip.ParseAddr(c)
			if aerr != nil {
				return true
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		p = p.Masked()
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			// ::ffff:a.b.c.d/n is the IPv4 prefix a.b.c.d/(n-96) (Go's dual-stack sockets).
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	total := new(big.Int).Add(unionSize(v4, 32), unionSize(v6, 64))
	return total.Cmp(new(big.Int).Lsh(big.NewInt(1), wideExposureBits)) > 0
}

// unionSize counts the units (a unit is a /unitBits prefix) covered by the union of ps. Sorted
// by address then length, a prefix is either inside the last kept one or disjoint from it
// (CIDR prefixes never partly overlap).
func unionSize(ps []netip.Prefix, unitBits int) *big.Int {
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	total := new(big.Int)
	var last netip.Prefix
	for _, p := range ps {
		if last.IsValid() && last.Contains(p.Addr()) {
			continue
		}
		last = p
		if host := unitBits - p.Bits(); host >= 0 {
			total.Add(total, new(big.Int).Lsh(big.NewInt(1), uint(host)))
		} else {
			total.Add(total, big.NewInt(1)) // narrower than a unit (an IPv6 /96): one unit at most
		}
	}
	return total
}

// worldWarningFor is the warning for admin CIDRs that OpenToWorld finds too wide, "" otherwise.
func worldWarningFor(cidrs []string) string {
	if !OpenToWorld(cidrs) {
		return ""
	}
	for _, c := range orDefault(cidrs) {
		if c == "0.0.0.0/0" || c == "::/0" {
			return worldWarning
		}
	}
	return "> [!WARNING]\n> The Kubernetes and Talos APIs accept connections from more than a /8's worth of addresses (" +
		codeList(cidrs) + "). Restrict them before any real use: `/poc up --admin-cidr YOUR.IP.ADDR.ESS/32`.\n"
}
