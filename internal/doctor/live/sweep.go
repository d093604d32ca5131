package live

import (
	"context"
	"fmt"
	"strings"

	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/provision"
)

// probeIPs are the flexible IPs of the zone that a probe made (any run's: the bot's tag, the
// probe's resource tag and a doctor-probe cluster).
func probeIPs(ctx context.Context, cfg Config) ([]*instance.IP, error) {
	res, err := instance.NewAPI(cfg.Scaleway).ListIPs(&instance.ListIPsRequest{Zone: cfg.Zone, Project: &cfg.Project,
		Tags: []string{provision.TagBot, provision.ResTag("probe-ip")}}, scw.WithContext(ctx), scw.WithAllPages())
	if err != nil {
		return nil, fmt.Errorf("list the probe's flexible IPs: %w", err)
	}
	var out []*instance.IP
	for _, ip := range res.IPs {
		for _, t := range ip.Tags {
			if strings.HasPrefix(t, provision.ClusterTag(ProbeCluster(""))) && provision.HasTag(ip.Tags, provision.ResTag("probe-ip")) {
				out = append(out, ip)
				break
			}
		}
	}
	return out, nil
}

// probeRecords are the DNS records a probe made (named _pocbot-probe-*).
func probeRecords(ctx context.Context, cfg Config) ([]*domain.Record, error) {
	if cfg.DNSZone == "" {
		return nil, nil
	}
	res, err := domain.NewAPI(cfg.Scaleway).ListDNSZoneRecords(&domain.ListDNSZoneRecordsRequest{DNSZone: cfg.DNSZone}, scw.WithContext(ctx), scw.WithAllPages())
	if err != nil {
		return nil, fmt.Errorf("list the records of %s: %w", cfg.DNSZone, err)
	}
	var out []*domain.Record
	for _, r := range res.Records {
		if strings.HasPrefix(r.Name, dnsProbePrefix) {
			out = append(out, r)
		}
	}
	return out, nil
}

// sweep removes what a killed probe left: its flexible IPs, its DNS records, its objects in the
// state bucket. What it could not remove is logged; the final look reports it.
func sweep(ctx context.Context, cfg Config) []string {
	var done []string
	if ips, err := probeIPs(ctx, cfg); err != nil {
		cfg.Log.Warn("sweep", "err", err)
	} else {
		for _, ip := range ips {
			if err := instance.NewAPI(cfg.Scaleway).DeleteIP(&instance.DeleteIPRequest{Zone: cfg.Zone, IP: ip.ID}, scw.WithContext(ctx)); err != nil {
				cfg.Log.Warn("sweep: delete a probe's flexible IP", "ip", ip.ID, "err", err)
				continue
			}
			done = append(done, "flexible IP "+ip.ID)
		}
	}
	if recs, err := probeRecords(ctx, cfg); err != nil {
		cfg.Log.Warn("sweep", "err", err)
	} else if len(recs) > 0 {
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		if err := deleteRecords(ctx, cfg, ids); err != nil {
			cfg.Log.Warn("sweep", "err", err)
		} else {
			for _, r := range recs {
				done = append(done, "DNS record "+r.Name+"."+cfg.DNSZone)
			}
		}
	}
	if cfg.Store != nil {
		keys, err := cfg.Store.SweepProbes(ctx)
		if err != nil {
			cfg.Log.Warn("sweep", "err", err)
		}
		for _, k := range keys {
			done = append(done, "object "+k)
		}
	}
	return done
}

// leftovers looks for anything of a probe's still there (this run's or another's).
func leftovers(ctx context.Context, cfg Config) []string {
	var left []string
	ips, err := probeIPs(ctx, cfg)
	if err != nil {
		left = append(left, "flexible IPs unknown ("+err.Error()+")")
	}
	for _, ip := range ips {
		left = append(left, "flexible IP "+ip.ID)
	}
	recs, err := probeRecords(ctx, cfg)
	if err != nil {
		left = append(left, "DNS records unknown ("+err.Error()+")")
	}
	for _, r := range recs {
		left = append(left, "DNS record "+r.Name+"."+cfg.DNSZone)
	}
	if cfg.Store != nil {
		keys, err := cfg.Store.ProbeObjects(ctx)
		if err != nil {
			left = append(left, "state bucket objects unknown ("+err.Error()+")")
		}
		for _, k := range keys {
			left = append(left, "object "+k)
		}
	}
	return left
}
