package chatops

import (
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob/memblob"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
)

// coldUpGraph builds the graph of a cold up of the default spec, as the Ops build it, without
// reaching anything (building calls no API), and the latency profile's duration of each node.
func coldUpGraph(b *testing.B) (*provision.Graph, func(string) time.Duration) {
	b.Helper()
	client, err := scw.NewClient(scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", "11111111-2222-4333-8444-555555555555"),
		scw.WithDefaultProjectID("11111111-2222-4333-8444-555555555555"), scw.WithAPIURL("http://127.0.0.1:9"))
	if err != nil {
		b.Fatal(err)
	}
	drv, err := provscw.New(provscw.Config{Client: client})
	if err != nil {
		b.Fatal(err)
	}
	bucket := memblob.OpenBucket(nil)
	b.Cleanup(func() { bucket.Close() })
	spec := provision.DefaultSpec()
	spec.ImageBucket = "pocbot-images"
	g := provision.NewGraph()
	if err := cluster.Build(g, spec, cluster.Config{Driver: drv, ImageBucket: bucket, FactoryURL: "http://127.0.0.1:9"}); err != nil {
		b.Fatal(err)
	}
	return g, cluster.DefaultWaits().Of
}
