package wiring

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/doctor/live"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/settings"
)

// HTTPClient is the client of the bot's plain HTTP calls (the Image Factory, the registries):
// one constructor, so that a recording wraps its transport as it wraps the others.
func HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: http.DefaultTransport, Timeout: timeout}
}

// Live opens what `bot doctor --live` probes with, from getenv: the Scaleway client with the
// bot's key (SCW_*), the state store with its presigning key (POC_STATE_URL; a store that does
// not open leaves its rows unprobed, logged), the ETA book and the first-contact observations on it, the Image Factory
// (POC_IMAGE_FACTORY_URL) and the registries (POC_REGISTRY_PROBE_URLS), a default cluster's spec
// and worker offer. close releases what it opened.
func Live(ctx context.Context, getenv func(string) string, log *slog.Logger) (cfg live.Config, close func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var closers []func()
	close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if cfg.Scaleway, err = ScalewayClient(getenv); err != nil {
		return cfg, close, err
	}
	env := settings.Env(getenv)
	spec := provision.DefaultSpec()
	if z := env.String("zone"); z != "" {
		spec.Zone = z
	}
	cfg.Spec, cfg.Zone, cfg.Offers = spec, scw.Zone(spec.Zone), []string{spec.BaremetalOffer}
	cfg.Project, _ = cfg.Scaleway.GetDefaultProjectID()
	cfg.Org, _ = cfg.Scaleway.GetDefaultOrganizationID()
	cfg.HTTP, cfg.FactoryURL, cfg.Log = HTTPClient(20*time.Second), images.FactoryBaseURL(getenv), log
	for _, u := range strings.Split(env.String("registry-probe-urls"), ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.Registries = append(cfg.Registries, u)
		}
	}
	if !env.Given("state-url") {
		return cfg, close, nil
	}
	store, serr := OpenStore(ctx, getenv, log, &closers)
	if serr != nil {
		log.Warn("doctor --live: the state bucket does not open; its rows are not probed", "err", serr)
		return cfg, close, nil
	}
	closers = append(closers, func() { _ = store.Close() })
	cfg.Store = store
	cfg.ETA = &eta.Book{Store: store, Profile: cluster.DefaultWaits()}
	cfg.FirstContact = &firstcontact.Book{Store: store}
	return cfg, close, nil
}
