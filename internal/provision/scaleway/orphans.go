package scaleway

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// TaggedResource is one resource that carries the bot's tag and exactly one cluster tag.
type TaggedResource struct {
	Kind string // KindServer, KindBaremetal, KindIP, KindVolume, KindSG
	ID   string
	Name string
	// Created is the API's creation date; zero when the API gives none (reserved IPs have none).
	Created time.Time
}

// TaggedCluster is what carries one cluster's tag in one zone.
type TaggedCluster struct {
	ClusterID string
	Zone      scw.Zone
	Resources []TaggedResource
}

// Oldest is the earliest creation date among the resources; ok is false when none is dated.
func (c TaggedCluster) Oldest() (t time.Time, ok bool) {
	for _, r := range c.Resources {
		if !r.Created.IsZero() && (!ok || r.Created.Before(t)) {
			t, ok = r.Created, true
		}
	}
	return t, ok
}

// ListTagged lists, per cluster tag, the resources of the project that the cluster sweep can
// delete (servers, Elastic Metal servers, reserved IPs, Block volumes, security groups), so that
// a caller can find clusters that no state document knows. It lists by the bot's tag and groups
// by the exact cluster tag; anything tagged pocbot-shared (the shared image snapshot) is never
// listed, and neither is a resource whose cluster tag is missing or ambiguous (it could not be
// swept by exact tag anyway). IAM SSH keys and DNS records carry no tags: the sweep of a cluster
// removes them by exact name, so they are not needed to find one.
func (d *Driver) ListTagged(ctx context.Context, zones ...scw.Zone) ([]TaggedCluster, error) {
	bot := []string{provision.TagBot}
	groups := map[string]*TaggedCluster{}
	add := func(zone scw.Zone, tags []string, kind, id, name string, created *time.Time) {
		if !provision.HasTag(tags, provision.TagBot) || provision.HasTag(tags, provision.TagShared) {
			return
		}
		cid, ok := clusterOf(tags)
		if !ok {
			return
		}
		key := string(zone) + "/" + cid
		g := groups[key]
		if g == nil {
			g = &TaggedCluster{ClusterID: cid, Zone: zone}
			groups[key] = g
		}
		r := TaggedResource{Kind: kind, ID: id, Name: name}
		if created != nil {
			r.Created = created.UTC()
		}
		g.Resources = append(g.Resources, r)
	}
	for _, zone := range zones {
		for _, kind := range sweptKinds {
			items, err := d.listKind(ctx, zone, kind, bot)
			if err != nil {
				return nil, classify("list tagged "+kindNames[kind], string(zone), err)
			}
			for _, it := range items {
				add(zone, it.tags, kind, it.id, it.name, it.created)
			}
		}
	}
	out := make([]TaggedCluster, 0, len(groups))
	for _, g := range groups {
		sort.Slice(g.Resources, func(i, j int) bool {
			if g.Resources[i].Kind != g.Resources[j].Kind {
				return g.Resources[i].Kind < g.Resources[j].Kind
			}
			return g.Resources[i].ID < g.Resources[j].ID
		})
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ClusterID != out[j].ClusterID {
			return out[i].ClusterID < out[j].ClusterID
		}
		return out[i].Zone < out[j].Zone
	})
	return out, nil
}

// clusterOf returns the cluster id of the one cluster tag in tags. Two cluster tags make the
// owner ambiguous: such a resource is left to a human rather than swept with the wrong cluster.
func clusterOf(tags []string) (string, bool) {
	prefix := provision.ClusterTag("")
	id := ""
	for _, t := range tags {
		if rest, ok := strings.CutPrefix(t, prefix); ok {
			if id != "" || rest == "" {
				return "", false
			}
			id = rest
		}
	}
	if id == "" || provision.ValidateClusterID(id) != nil {
		return "", false
	}
	return id, true
}
