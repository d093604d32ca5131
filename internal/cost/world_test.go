package cost_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/sim/catalog"
)

// world is a loopback Scaleway API for prices: the catalog emulator plus
// small stand-ins for Instance products/servers and Elastic Metal offers
// built from the SDK's own types with the recorded figures.
type world struct {
	Catalog *catalog.Catalog
	URL     string
	Client  *scw.Client

	mu            sync.Mutex
	instanceDown  bool
	baremetalDown bool
	nanoHourly    float32 // products/servers hourly_price of PLAY2-NANO
	calls         map[string]int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{Catalog: catalog.New(catalog.Options{}), nanoHourly: 0.02754, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle(catalog.Path, w.Catalog.Handler())
	mux.HandleFunc("GET /instance/v1/zones/{zone}/products/servers", w.servers)
	mux.HandleFunc("GET /baremetal/v1/zones/{zone}/offers", w.offers)
	mux.HandleFunc("GET /baremetal/v1/zones/{zone}/offers/{id}", w.offer)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client, err := scw.NewClient(scw.WithAPIURL(srv.URL), scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", "11111111-1111-1111-1111-111111111111"),
		scw.WithHTTPClient(srv.Client()), scw.WithDefaultZone(scw.ZoneFrPar1))
	if err != nil {
		t.Fatalf("scw client: %v", err)
	}
	w.URL, w.Client = srv.URL, client
	return w
}

func (w *world) set(f func(*world)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w)
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(v)
}

func (w *world) servers(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.calls["servers"]++
	down, nano := w.instanceDown, w.nanoHourly
	w.mu.Unlock()
	if down {
		writeJSON(rw, 503, map[string]string{"message": "service unavailable"})
		return
	}
	monthly := func(f float32) *float32 { v := f * 730; return &v }
	all := map[string]*instance.ServerType{
		"PLAY2-NANO": {HourlyPrice: nano, MonthlyPrice: monthly(nano), Ncpus: 2, RAM: 4 << 30, Arch: instance.ArchX86_64},
		"DEV1-XL":    {HourlyPrice: 0.065076, MonthlyPrice: monthly(0.065076), Ncpus: 4, RAM: 12 << 30, Arch: instance.ArchX86_64},
		"START1-S":   {HourlyPrice: 0.0106, Ncpus: 2, RAM: 2 << 30, Arch: instance.ArchX86_64, EndOfService: true},
	}
	// Instance pagination: X-Total-Count header, per_page/page.
	rw.Header().Set("X-Total-Count", strconv.Itoa(len(all)))
	page := r.URL.Query().Get("page")
	resp := instance.ListServersTypesResponse{TotalCount: uint32(len(all)), Servers: all}
	if page != "" && page != "1" {
		resp.Servers = map[string]*instance.ServerType{}
	}
	writeJSON(rw, 200, &resp)
}

func emOffer() *baremetal.Offer {
	monthlyID := "7b3dae29-0658-4351-b8a7-7b97aef6efc2"
	return &baremetal.Offer{
		ID: "8779d2c1-cd10-4a34-a006-cb5b1fb5cbc7", Name: "EM-A116X-SSD", Stock: baremetal.OfferStockAvailable, Enable: true,
		PricePerHour: &scw.Money{CurrencyCode: "EUR", Nanos: 77_000_000}, Fee: &scw.Money{CurrencyCode: "EUR"},
		SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly, MonthlyOfferID: &monthlyID, Zone: scw.ZoneFrPar1,
		CommercialRange: "aluminium", QuotaName: "EM_A116X_SSD",
	}
}

func (w *world) offers(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.calls["offers"]++
	down := w.baremetalDown
	w.mu.Unlock()
	if down {
		writeJSON(rw, 503, map[string]string{"message": "service unavailable"})
		return
	}
	var list []*baremetal.Offer
	if sp := r.URL.Query().Get("subscription_period"); sp == "" || sp == "hourly" || sp == "unknown_subscription_period" {
		list = append(list, emOffer())
	}
	if r.URL.Query().Get("page") != "" && r.URL.Query().Get("page") != "1" {
		list = nil
	}
	writeJSON(rw, 200, &baremetal.ListOffersResponse{TotalCount: 1, Offers: list})
}

// offer answers GET offers/{id}: the monthly offer is not recorded, so it is
// Not Found here, with the recorded Elastic Metal 404 body.
func (w *world) offer(rw http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.PathValue("id"), "8779d2c1") {
		writeJSON(rw, 200, emOffer())
		return
	}
	writeJSON(rw, 404, map[string]string{"message": "Not Found"})
}
