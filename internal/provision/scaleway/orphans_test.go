package scaleway

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
)

func TestClusterOfExactTagOnly(t *testing.T) {
	t.Parallel()
	bot, res := provision.TagBot, provision.ResTag("ip-0")
	for _, c := range []struct {
		name string
		tags []string
		want string
		ok   bool
	}{
		{"one cluster tag", []string{bot, provision.ClusterTag("t-4"), res}, "t-4", true},
		{"no cluster tag", []string{bot, res}, "", false},
		{"two cluster tags are ambiguous", []string{bot, provision.ClusterTag("t-4"), provision.ClusterTag("t-42")}, "", false},
		{"empty cluster id", []string{bot, provision.ClusterTag("")}, "", false},
		{"invalid cluster id", []string{bot, provision.ClusterTag("Bad_Name")}, "", false},
		{"a look-alike prefix is not a cluster tag", []string{bot, "pocbot-clusters=t-4"}, "", false},
	} {
		got, ok := clusterOf(c.tags)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: clusterOf(%v) = %q, %v; want %q, %v", c.name, c.tags, got, ok, c.want, c.ok)
		}
	}
}

func TestOldestIgnoresUndated(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		res  []TaggedResource
		want time.Time
		ok   bool
	}{
		{"none", nil, time.Time{}, false},
		{"only undated", []TaggedResource{{Kind: KindIP}}, time.Time{}, false},
		{"earliest of dated", []TaggedResource{{Kind: KindIP}, {Kind: KindSG, Created: t1.Add(time.Hour)}, {Kind: KindServer, Created: t1}}, t1, true},
	} {
		got, ok := TaggedCluster{Resources: c.res}.Oldest()
		if !got.Equal(c.want) || ok != c.ok {
			t.Errorf("%s: Oldest = %s, %v; want %s, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
