// Package catalog is the Scaleway public product catalog endpoint of the
// emulated world: GET /product-catalog/v2alpha1/public-catalog/products,
// answered with scaleway-sdk-go's own ListPublicCatalogProductsResponse.
//
// Its Instance and Elastic Metal products are the ones scaleway-cli recorded
// in fr-par-1 (recorded.go names the cassettes), in their recorded shapes.
// Block Storage, snapshots and Object Storage are in no recording: they are
// the dated table's labelled estimates, with "ESTIMATE" in the description.
// Nothing is invented to more precision than its source.
//
// A Catalog can be made to fail (503), to omit a product, or to mark one end
// of sale, so that callers can test their fallbacks. The Scaleway emulator
// mounts Handler() through its Options.Extra map; tests can serve it alone
// with httptest and the real SDK client (scw.WithAPIURL).
//
// # Contract
//
// CLI is github.com/scaleway/scaleway-cli at c2d470d8,
// internal/namespaces/<ns>/testdata/<name>.cassette.yaml; SDK is
// scaleway-sdk-go v1.39.0 (api/product_catalog/v2alpha1).
//
//	| Behaviour                                                                 | Source                                                        |
//	|---------------------------------------------------------------------------|---------------------------------------------------------------|
//	| product_types=instance in a zone: 96 products on one page with no         | CLI instance/v1 test-server-type-list-on-fr-par1 (2026-07-01) |
//	|   page_size; name = offer_id = commercial type; unit hour, minute for the |                                                               |
//	|   L4 GPU types; SKU /compute/play2_nano/run_par1                          |                                                               |
//	| no flexible IP in the instance listing (nor any product type for IPs)     | same cassette; SDK ListPublicCatalogProductsRequestProductType |
//	| Elastic Metal: product "Elastic Metal EM-A116X-SSD"; one product per      | CLI baremetal/v1 test-baremetal-list-offer-simple (2025-12-02) |
//	|   unit: hour (offer_id the hourly offer's UUID), month (the monthly       |                                                               |
//	|   offer's UUID), setup (the monthly offer's fee); 83 in fr-par-1          |                                                               |
//	| no page_size: 100 a page (the recording got 96 on page 1; the exact       | source silent beyond 96                                       |
//	|   default is not recorded); page_size 1..1000                             |                                                               |
//	| filters product_types, status, api_ids (offer_id), zone / region / global | SDK request fields; their semantics: source silent            |
//	| Block Storage, snapshots, Object Storage: unit gigabyte, per GB and month, | no recording: the table's estimates (×730 h), issue 10's      |
//	|   "ESTIMATE" in the description                                           |   reading of the real unit                                    |
//	| unknown product type: 400 invalid_arguments                               | SDK enum; the body: source silent                             |
package catalog

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	pc "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
)

// Path is the endpoint this package serves.
const Path = "/product-catalog/v2alpha1/public-catalog/products"

// DefaultPageSize is used when a request has no page_size. The recorded
// requests send none and got 96 products on page 1; 100 covers that.
const DefaultPageSize = 100

// maxPageSize bounds page_size like a real API would.
const maxPageSize = 1000

// Options configure a Catalog.
type Options struct {
	// Zones the zonal products exist in; default fr-par-1..3, nl-ams-1..3,
	// pl-waw-1..3 (Scaleway's prices do not vary by location).
	Zones  []scw.Zone
	Logger *slog.Logger
}

// Catalog is a mutable emulated catalog, safe for concurrent use.
type Catalog struct {
	mu       sync.Mutex
	products []*pc.PublicCatalogProduct
	down     bool
	omitted  map[string]bool // by product name or SKU
	log      *slog.Logger
	requests int
}

// New builds a catalog with the recorded and estimated products.
func New(opts Options) *Catalog {
	zones := opts.Zones
	if len(zones) == 0 {
		zones = []scw.Zone{"fr-par-1", "fr-par-2", "fr-par-3", "nl-ams-1", "nl-ams-2", "nl-ams-3", "pl-waw-1", "pl-waw-2", "pl-waw-3"}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Catalog{products: buildProducts(zones), omitted: map[string]bool{}, log: log}
}

// Handler serves a default catalog.
func Handler() http.Handler { return New(Options{}).Handler() }

// SetDown makes every request answer 503 (true) or work again (false).
func (c *Catalog) SetDown(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
}

// Omit hides the products whose name (e.g. "PLAY2-NANO") or SKU matches.
func (c *Catalog) Omit(nameOrSKU string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.omitted[nameOrSKU] = true
}

// SetStatus changes the status of the products named so (e.g. to
// end_of_sale) and reports how many it changed.
func (c *Catalog) SetStatus(name string, status pc.PublicCatalogProductStatus) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.products {
		if p.Product == name {
			p.Status = status
			n++
		}
	}
	return n
}

// Requests is how many requests the catalog has answered (503s included).
func (c *Catalog) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Handler serves GET Path.
func (c *Catalog) Handler() http.Handler {
	return http.HandlerFunc(c.serve)
}

func (c *Catalog) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.requests++
	down := c.down
	c.mu.Unlock()
	if r.URL.Path != Path {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "Method Not Allowed"})
		return
	}
	if down {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "service unavailable", "type": "service_unavailable"})
		return
	}
	q := r.URL.Query()
	page, err := intParam(q.Get("page"), 1, 1, 1<<30)
	if err != nil {
		invalid(w, "page", err)
		return
	}
	size, err := intParam(q.Get("page_size"), DefaultPageSize, 1, maxPageSize)
	if err != nil {
		invalid(w, "page_size", err)
		return
	}
	types := map[string]bool{}
	for _, t := range q["product_types"] {
		if !slices.Contains(pc.ListPublicCatalogProductsRequestProductType("").Values(), pc.ListPublicCatalogProductsRequestProductType(t)) {
			invalid(w, "product_types", fmt.Errorf("unknown product type %q", t))
			return
		}
		types[t] = true
	}
	statuses := map[string]bool{}
	for _, s := range q["status"] {
		statuses[s] = true
	}
	apiIDs := map[string]bool{}
	for _, id := range q["api_ids"] {
		apiIDs[id] = true
	}
	zone, region, global := q.Get("zone"), q.Get("region"), q.Get("global") == "true"

	c.mu.Lock()
	var match []*pc.PublicCatalogProduct
	for _, p := range c.products {
		if c.omitted[p.Product] || c.omitted[p.Sku] {
			continue
		}
		if len(types) > 0 && !types[productType(p)] {
			continue
		}
		if len(statuses) > 0 && !statuses[string(p.Status)] {
			continue
		}
		if len(apiIDs) > 0 && !apiIDs[apiID(p)] {
			continue
		}
		if !localityMatches(p.Locality, zone, region, global) {
			continue
		}
		cp := *p
		match = append(match, &cp)
	}
	c.mu.Unlock()

	resp := pc.ListPublicCatalogProductsResponse{TotalCount: uint64(len(match)), Products: []*pc.PublicCatalogProduct{}}
	start := (page - 1) * size
	if start < len(match) {
		resp.Products = match[start:min(start+size, len(match))]
	}
	writeJSON(w, http.StatusOK, &resp)
}

func intParam(s string, def, lo, hi int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
	}
	return n, nil
}

// invalid answers like Scaleway's invalid_arguments errors.
func invalid(w http.ResponseWriter, field string, err error) {
	writeJSON(w, http.StatusBadRequest, map[string]any{
		"type":    "invalid_arguments",
		"message": "invalid argument(s)",
		"details": []map[string]any{{"argument_name": field, "reason": "constraint", "help_message": err.Error()}},
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func localityMatches(l *pc.PublicCatalogProductLocality, zone, region string, global bool) bool {
	if l == nil {
		return zone == "" && region == ""
	}
	switch {
	case zone != "":
		return l.Zone != nil && string(*l.Zone) == zone
	case region != "":
		return l.Region != nil && string(*l.Region) == region
	case global:
		return l.Global != nil && *l.Global
	}
	return true
}

func productType(p *pc.PublicCatalogProduct) string {
	switch pr := p.Properties; {
	case pr == nil:
	case pr.Instance != nil:
		return "instance"
	case pr.ElasticMetal != nil:
		return "elastic_metal"
	case pr.BlockStorage != nil:
		return "block_storage"
	case pr.ObjectStorage != nil:
		return "object_storage"
	}
	return "unknown_product_type"
}

func apiID(p *pc.PublicCatalogProduct) string {
	if p.Properties != nil {
		if p.Properties.Instance != nil {
			return p.Properties.Instance.OfferID
		}
		if p.Properties.ElasticMetal != nil {
			return p.Properties.ElasticMetal.OfferID
		}
	}
	return p.Product
}

// ---- the products ----

func money(s string) *scw.Money {
	m, err := cost.ParseDecimal(cost.CurrencyEUR, s)
	if err != nil {
		panic(err) // the figures are constants
	}
	return m.SCW()
}

// skuName is the recorded SKU form of a name: "PLAY2-NANO" -> "play2_nano"
// for Instances ("/compute/play2_nano/run_par1"), and "EM-A116X-SSD" ->
// "em-a116x-ssd" for Elastic Metal ("/baremetal/em-a116x-ssd/hourly/run_par1").
func skuName(name string, sep string) string {
	return strings.ToLower(strings.ReplaceAll(name, "-", sep))
}

// emVariant is the recorded variant word and SKU path of each Elastic Metal unit.
var emVariant = map[string]struct{ word, path, per string }{
	"hour":  {"hour", "hourly/run_", "hour"},
	"month": {"month", "monthly/run_", "month"},
	"setup": {"fees", "monthly/run_", "setup"},
}

func buildProducts(zones []scw.Zone) []*pc.PublicCatalogProduct {
	var out []*pc.PublicCatalogProduct
	unit := func(u string) *pc.PublicCatalogProductUnitOfMeasure {
		return &pc.PublicCatalogProductUnitOfMeasure{Unit: pc.PublicCatalogProductUnitOfMeasureCountableUnit(u), Size: 1}
	}
	ga := pc.PublicCatalogProductStatusGeneralAvailability
	regions := map[scw.Region]bool{}
	for _, z := range zones {
		z := z
		loc := &pc.PublicCatalogProductLocality{Zone: &z}
		dc := dcSuffix(z)
		for _, t := range recordedInstances {
			out = append(out, &pc.PublicCatalogProduct{
				Sku: "/compute/" + skuName(t.name, "_") + "/run_" + dc, ServiceCategory: "Compute", ProductCategory: "Instance",
				Product: t.name, Variant: t.name + " - " + string(z),
				Description: fmt.Sprintf("%s - %s (%s€ per %s)", t.name, z, t.price, t.unit),
				Locality:    loc, Price: &pc.PublicCatalogProductPrice{RetailPrice: money(t.price)},
				Properties: &pc.PublicCatalogProductProperties{
					Hardware: &pc.PublicCatalogProductPropertiesHardware{
						CPU:     &pc.PublicCatalogProductPropertiesHardwareCPU{Arch: pc.PublicCatalogProductPropertiesHardwareCPUArchX64, Virtual: &pc.PublicCatalogProductPropertiesHardwareCPUVirtual{Count: t.threads}, Threads: t.threads, Description: fmt.Sprintf("x64, vCPUs: %d", t.threads)},
						RAM:     &pc.PublicCatalogProductPropertiesHardwareRAM{Size: scw.Size(t.ram), Description: fmt.Sprintf("%d GiB", t.ram>>30)},
						Network: &pc.PublicCatalogProductPropertiesHardwareNetwork{PublicBandwidth: t.bw, InternalBandwidth: t.bw, MaxPublicBandwidth: t.bw},
					},
					Instance: &pc.PublicCatalogProductPropertiesInstance{Range: t.rng, OfferID: t.name, RecommendedReplacementOfferIDs: []string{}},
				},
				UnitOfMeasure: unit(t.unit), Status: ga, Badges: []pc.PublicCatalogProductProductBadge{},
			})
		}
		for _, o := range recordedElasticMetal {
			v := emVariant[o.unit]
			name := strings.TrimPrefix(o.product, "Elastic Metal ")
			sku := "/baremetal/" + skuName(name, "-") + "/" + v.path + dc
			if o.unit == "setup" {
				sku += "/fees"
			}
			out = append(out, &pc.PublicCatalogProduct{
				Sku: sku, ServiceCategory: "BareMetal", ProductCategory: "Elastic Metal",
				Product: o.product, Variant: fmt.Sprintf("%s - %s - %s", o.product, v.word, z),
				Description: fmt.Sprintf("%s - %s - %s (%s€ per %s)", o.product, v.word, z, o.price, v.per),
				Locality:    loc, Price: &pc.PublicCatalogProductPrice{RetailPrice: money(o.price)},
				Properties:    &pc.PublicCatalogProductProperties{ElasticMetal: &pc.PublicCatalogProductPropertiesElasticMetal{Range: o.rng, OfferID: o.offerID}},
				UnitOfMeasure: unit(o.unit), Status: pc.PublicCatalogProductStatus(o.status), Badges: []pc.PublicCatalogProductProductBadge{},
			})
		}
		// Block Storage: no recording lists it. Priced per GB and month
		// (unit "gigabyte"), the table's estimates times 730 hours.
		for _, iops := range []uint32{5000, 15000} {
			e := tableEntry(cost.Item{Kind: cost.KindBlockVolume, IOPS: iops})
			k := fmt.Sprintf("%dK", iops/1000)
			m := e.Amount.Mul(730)
			out = append(out, &pc.PublicCatalogProduct{
				Sku: "/storage/block/sbs_" + strings.ToLower(k) + "/" + dc, ServiceCategory: "Storage", ProductCategory: "Block Storage",
				Product: "Block Storage " + k + " IOPS", Variant: "Block Storage " + k + " IOPS - " + string(z),
				Description: fmt.Sprintf("Block Storage %s IOPS - %s (%s€ per GB per month) ESTIMATE: %s, no recording", k, z, m.Decimal(0), cost.TableDate),
				Locality:    loc, Price: &pc.PublicCatalogProductPrice{RetailPrice: m.SCW()},
				Properties:    &pc.PublicCatalogProductProperties{BlockStorage: &pc.PublicCatalogProductPropertiesBlockStorage{Volume: &pc.PublicCatalogProductPropertiesBlockStorageVolumeType{MinSize: scw.Size(cost.GB), MaxSize: scw.Size(10_000 * cost.GB)}}},
				UnitOfMeasure: unit("gigabyte"), Status: ga, Badges: []pc.PublicCatalogProductProductBadge{},
			})
		}
		e := tableEntry(cost.Item{Kind: cost.KindSnapshot})
		m := e.Amount.Mul(730)
		out = append(out, &pc.PublicCatalogProduct{
			Sku: "/storage/block/snapshot/" + dc, ServiceCategory: "Storage", ProductCategory: "Block Storage",
			Product: "Block Storage Snapshot", Variant: "Block Storage Snapshot - " + string(z),
			Description: fmt.Sprintf("Block Storage Snapshot - %s (%s€ per GB per month) ESTIMATE: %s, no recording", z, m.Decimal(0), cost.TableDate),
			Locality:    loc, Price: &pc.PublicCatalogProductPrice{RetailPrice: m.SCW()},
			Properties:    &pc.PublicCatalogProductProperties{BlockStorage: &pc.PublicCatalogProductPropertiesBlockStorage{Snapshot: &pc.PublicCatalogProductPropertiesBlockStorageSnapshotType{}}},
			UnitOfMeasure: unit("gigabyte"), Status: ga, Badges: []pc.PublicCatalogProductProductBadge{},
		})
		if r, err := z.Region(); err == nil {
			regions[r] = true
		}
	}
	// Object Storage is regional; the table's figure is per GB-month already.
	e := tableEntry(cost.Item{Kind: cost.KindObjectStorage})
	for _, r := range sortedRegions(regions) {
		r := r
		out = append(out, &pc.PublicCatalogProduct{
			Sku: "/storage/object/standard/" + string(r), ServiceCategory: "Storage", ProductCategory: "Object Storage",
			Product: "Object Storage Standard", Variant: "Object Storage Standard - " + string(r),
			Description: fmt.Sprintf("Object Storage Standard - %s (%s€ per GB per month) ESTIMATE: %s, no recording", r, e.Amount.Decimal(0), cost.TableDate),
			Locality:    &pc.PublicCatalogProductLocality{Region: &r}, Price: &pc.PublicCatalogProductPrice{RetailPrice: e.Amount.SCW()},
			Properties: &pc.PublicCatalogProductProperties{ObjectStorage: &pc.PublicCatalogProductPropertiesObjectStorage{
				Class: &pc.PublicCatalogProductPropertiesObjectStorageClassType{StorageClass: pc.PublicCatalogProductPropertiesObjectStorageClassTypeStorageClassStandard}}},
			UnitOfMeasure: unit("gigabyte"), Status: ga, Badges: []pc.PublicCatalogProductProductBadge{},
		})
	}
	return out
}

func tableEntry(it cost.Item) cost.TableEntry {
	e, ok := cost.LookupTable(it)
	if !ok {
		panic(fmt.Sprintf("catalog: no table entry for %+v", it))
	}
	return e
}

func sortedRegions(m map[scw.Region]bool) []scw.Region {
	out := make([]scw.Region, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// dcSuffix turns fr-par-1 into par1, like the recorded SKU "/compute/dev1_xl/run_par1".
func dcSuffix(z scw.Zone) string {
	parts := strings.Split(string(z), "-")
	if len(parts) != 3 {
		return string(z)
	}
	return parts[1] + parts[2]
}
