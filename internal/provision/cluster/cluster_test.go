package cluster

import (
	"testing"

	"github.com/pocbot/pocbot/internal/provision"
)

func TestCovered(t *testing.T) {
	for _, tc := range []struct {
		cidrs  []string
		runner string
		want   bool
	}{
		{[]string{"0.0.0.0/0"}, "203.0.113.7", true},
		{[]string{"203.0.113.0/24"}, "203.0.113.7/32", true},
		{[]string{"203.0.113.0/24"}, "203.0.112.0/23", false}, // wider than the admin range
		{[]string{"198.51.100.0/24"}, "203.0.113.7", false},
		{[]string{"not-a-cidr", "203.0.113.7/32"}, "203.0.113.7", true},
		{nil, "203.0.113.7", false},
	} {
		got, err := Covered(tc.cidrs, tc.runner)
		if err != nil || got != tc.want {
			t.Errorf("Covered(%v, %s) = %v, %v; want %v", tc.cidrs, tc.runner, got, err, tc.want)
		}
	}
	if _, err := Covered([]string{"0.0.0.0/0"}, "runner"); err == nil {
		t.Error("a runner that is no address must be an error")
	}
}

func TestEndpoint(t *testing.T) {
	spec := provision.DefaultSpec()
	if got := Endpoint(spec, "acme-app-7", []string{"127.1.0.1", "127.1.0.2"}, 6443); got != "https://127.1.0.1:6443" {
		t.Errorf("endpoint without DNS = %s", got)
	}
	spec.DNSZone = "poc.example.com."
	if got := Endpoint(spec, "acme-app-7", []string{"127.1.0.1"}, 6443); got != "https://k8s-poc.acme-app-7.poc.example.com:6443" {
		t.Errorf("endpoint with DNS = %s", got)
	}
}
