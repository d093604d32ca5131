package chatops_test

import (
	"strings"
	"testing"
	"time"

	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"

	"github.com/pocbot/pocbot/internal/commands"
)

// The DNS hijack, replayed through `bot handle`: a write user's `/poc up --dns-zone` for a zone the
// repository did not list is refused before any Scaleway call; in a listed zone the cluster gets
// names of its own, and what the zone served before (production's `edge`) is untouched by up and
// by down.
func TestDNSZoneAllowlistAndOwnNames(t *testing.T) {
	t.Parallel()
	const repo = "acme/dns"
	h, ctx := scene{repo: repo, users: []string{"mallory:write"}, issues: []int{1}, timeout: 3 * time.Minute}.open(t)
	gh := h.gh
	name := commands.ClusterName("acme", "dns", 1)

	t.Run("a zone the repository does not allow", func(t *testing.T) {
		for _, cfg := range []string{"", "dns_zones: [poc.example.com]\n"} {
			gh.SetFile(repo, "", ".github/poc.yml", []byte(cfg))
			calls := h.calls()
			out, err := h.handle(ctx, h.comment(repo, 1, false, "mallory", "/poc up --dns-zone prod.example.com"))
			if err != nil || out.Refused != "dns zone not allowed" {
				t.Fatalf("config %q: outcome %+v, err %v", cfg, out, err)
			}
			if last := lastBody(h, repo, 1); !strings.Contains(last, "dns_zones") || !strings.Contains(last, ".github/poc.yml") {
				t.Errorf("config %q: the refusal does not name the setting:\n%s", cfg, last)
			}
			if d := h.calls() - calls; d != 0 {
				t.Errorf("config %q: a refused zone made %d Scaleway calls", cfg, d)
			}
		}
	})

	t.Run("an allowed zone gets the cluster's own names", func(t *testing.T) {
		const zone = "poc.example.com"
		gh.SetFile(repo, "", ".github/poc.yml", []byte("dns_zones: [poc.example.com]\n"))
		prod := h.w.Scaleway.SeedDNSRecord(zone, domain.Record{Name: "edge", Type: domain.RecordTypeA, Data: "198.51.100.7", TTL: 300})
		out, err := h.handle(ctx, h.comment(repo, 1, false, "mallory", "/poc up --dns-zone poc.example.com --cp-count 1"))
		if err != nil || !out.OK {
			t.Fatalf("up: outcome %+v, err %v\n%s", out, err, lastBody(h, repo, 1))
		}
		byName := map[string][]domain.Record{}
		for _, r := range h.w.Scaleway.DNSRecords(zone) {
			byName[r.Name] = append(byName[r.Name], r)
		}
		if e := byName["edge"]; len(e) != 1 || e[0].ID != prod {
			t.Errorf("production edge became %+v", e)
		}
		if len(byName["k8s-poc."+name]) != 1 || len(byName["edge."+name]) != 1 {
			t.Errorf("cluster records: %v", byName)
		}
		var sticky string
		for _, c := range h.botComments(repo, 1) {
			if strings.Contains(c.Body, commands.StickyMarker(name)) {
				sticky = c.Body
			}
		}
		if !strings.Contains(sticky, "edge."+name+"."+zone) {
			t.Errorf("the status comment does not give the worker's name:\n%s", sticky)
		}
		if out, err := h.handle(ctx, h.comment(repo, 1, false, "mallory", "/poc down")); err != nil || !out.OK {
			t.Fatalf("down: outcome %+v, err %v", out, err)
		}
		left := h.w.Scaleway.DNSRecords(zone)
		if len(left) != 1 || left[0].ID != prod {
			t.Errorf("after down the zone holds %+v, want production's edge only", left)
		}
	})
	scanSecrets(t, h)
}
