package doctor

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// CiliumChartName is the checklist item of the pinned Cilium chart.
const CiliumChartName = "Cilium chart"

// ciliumChartTimeout bounds the download (a few hundred KiB) and the renders.
const ciliumChartTimeout = 2 * time.Minute

// CiliumChart fetches the pinned Cilium chart (cilium-chart), checks it against its digest and
// renders it in both routing modes as an up's pre-flight does (talos.CheckCiliumChart): a pin
// the bot cannot install shows here, not at the next `/poc up`.
func CiliumChart(src chart.Source, client *http.Client) Check {
	return func(ctx context.Context) []Item {
		ctx, cancel := context.WithTimeout(ctx, ciliumChartTimeout)
		defer cancel()

		archive, err := chart.Fetch(ctx, client, src, nil)
		if err != nil {
			return one(CiliumChartName, Fail, err.Error(),
				"set cilium-chart (POC_CILIUM_CHART) to URL@sha256:DIGEST of a chart archive this runner can download, or unset it for the default pin")
		}

		for _, routing := range []string{talos.RoutingTunnel, talos.RoutingNative} {
			if err := talos.CheckCiliumChart(archive, routing, ""); err != nil {
				return one(CiliumChartName, Fail, fmt.Sprintf("%s, %s routing: %v", src, routing, err),
					"pin a chart the bot renders in cilium-chart (POC_CILIUM_CHART): the default pin, or one whose templates use only what internal/chart supports (docs/architecture.md, Cilium's install)")
			}
		}

		return one(CiliumChartName, OK, fmt.Sprintf("%s: digest matches, renders in both routing modes (%d kB archive)", src, len(archive)/1024), "")
	}
}
