package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// chartFetchTimeout bounds one download of the Cilium chart (a few hundred KiB).
const chartFetchTimeout = 2 * time.Minute

// ciliumCharts keeps the chart archives this process fetched, by digest: the configs are
// generated several times in a run (the control planes', then the worker's once its disk is known).
var ciliumCharts sync.Map

// ciliumChart is the pinned Cilium chart (Config.CiliumChart, else talos.DefaultCiliumChart),
// checked against its digest: from this process's memory, the image bucket's cache, or its URL
// (and then into the bucket, so that the next runs need no download).
func (b *builder) ciliumChart(ctx context.Context) ([]byte, error) {
	src := b.cfg.CiliumChart
	if src.URL == "" {
		src = talos.DefaultCiliumChart
	}

	if v, ok := ciliumCharts.Load(src.SHA256); ok {
		return v.([]byte), nil
	}

	var cache chart.Cache
	if b.cfg.ImageBucket != nil {
		cache = bucketCache{b.cfg.ImageBucket}
	}

	ctx, cancel := context.WithTimeout(ctx, chartFetchTimeout)
	defer cancel()

	archive, err := chart.Fetch(ctx, http.DefaultClient, src, cache)
	if err != nil {
		return nil, fmt.Errorf("the Cilium chart %s: %w", src, err)
	}

	ciliumCharts.Store(src.SHA256, archive)

	return archive, nil
}

// ciliumPreflight renders the pinned chart as talos-config will, in the up's pre-flight: the
// configs need the worker and the reserved IPs, so a chart that does not render would otherwise
// be found after they and the control planes were bought.
func (b *builder) ciliumPreflight(ctx context.Context, r *provision.Run) error {
	archive, err := b.ciliumChart(ctx)
	if err != nil {
		return err
	}

	if err := talos.CheckCiliumChart(archive, r.Spec().CiliumRouting, ""); err != nil {
		return fmt.Errorf("the pinned Cilium chart (cilium-chart, POC_CILIUM_CHART): %w", err)
	}

	return nil
}

// bucketCache is the image bucket as the chart's cache.
type bucketCache struct{ b *blob.Bucket }

func (c bucketCache) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := c.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, chart.ErrNotCached
	}

	return v, err
}

func (c bucketCache) Put(ctx context.Context, key string, v []byte) error {
	return c.b.WriteAll(ctx, key, v, &blob.WriterOptions{ContentType: "application/gzip"})
}
