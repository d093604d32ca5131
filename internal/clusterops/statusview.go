package clusterops

import (
	"context"
	"sort"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// statusQuoteBudget bounds the pricing of a status: a status must answer when the price APIs
// do not (its cost then says why).
const statusQuoteBudget = 20 * time.Second

// StatusView is status s at now as `/poc status` (commands.RenderStatus) and `bot status`
// (commands.WriteStatusText) show it, priced by q (nil: no cost), a paused cluster at its paused
// price. The caller adds what only it knows: the keep label as the event's labels say, the parked
// workers, the last status comment.
func StatusView(ctx context.Context, s *Status, q *cost.Quoter, now time.Time) commands.StatusView {
	h := s.Header
	v := commands.StatusView{Cluster: h.Cluster, Exists: true, Phase: lifecycle.Phase(h.Phase), Created: h.Created,
		Expires: h.Expires, Now: now, Repository: h.Repository, Number: h.Number, Kind: h.Kind,
		RequestedBy: h.RequestedBy, HealthNote: s.Unreachable}
	meta, err := MetaOf(h)
	if err != nil {
		v.MetaNote = err.Error()
	}
	v.Keep, v.DownFailed = meta.Keep, meta.DownFailed
	if l := s.Lock; l != nil {
		v.Lock = &commands.StatusLock{ID: l.ID, Actor: l.Actor, Command: l.Command, RunID: l.RunID, Since: l.Since, Expires: l.Expires}
	}
	for _, c := range s.Health {
		v.Health = append(v.Health, commands.HealthCheck{Name: c.Name, OK: c.OK, Target: c.Target, Detail: c.Detail})
	}
	st := s.State
	if st == nil {
		return v
	}
	names := make([]string, 0, len(st.Resources))
	for n := range st.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := st.Resources[n]
		addr := r.Attrs["address"]
		if addr == "" {
			addr = r.Attrs["ipv4"]
		}
		v.Resources = append(v.Resources, commands.ResourceLine{Kind: r.Kind, Name: n, ID: r.ID, Address: addr, State: r.Status, Zone: r.Zone})
	}
	v.APIEndpoints, _ = Endpoints(st)
	v.Edge = st.Outputs[cluster.OutWorkerIP]
	if q == nil {
		return v
	}
	qctx, cancel := context.WithTimeout(ctx, statusQuoteBudget)
	defer cancel()
	life := time.Duration(0)
	if h.Expires.After(now) {
		life = h.Expires.Sub(now)
	}
	quote, err := QuoteState(qctx, q, h, st, life, true)
	if err != nil {
		v.CostNote = err.Error()
		return v
	}
	v.DailyCost, v.Accrued = quote.Daily.Format(2), quote.Accrued(h.Created, now).Format(2)
	if life > 0 {
		v.UntilExpiry = quote.UntilExpiry(now, h.Expires).Format(2)
	}
	if quote.HasUnknown() {
		v.CostNote = "lower bound: some prices unknown"
	}
	return v
}
