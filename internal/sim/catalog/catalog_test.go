package catalog_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	pc "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/sim/catalog"
)

// start serves a catalog on loopback and returns a real SDK client for it.
func start(t *testing.T, opts catalog.Options) (*catalog.Catalog, *pc.PublicCatalogAPI) {
	t.Helper()
	c := catalog.New(opts)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	client, err := scw.NewClient(scw.WithAPIURL(srv.URL), scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", "11111111-1111-1111-1111-111111111111"), scw.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatalf("scw client: %v", err)
	}
	return c, pc.NewPublicCatalogAPI(client)
}

func zone(z string) *scw.Zone { v := scw.Zone(z); return &v }

func TestRecordedAndEstimatedPrices(t *testing.T) {
	_, api := start(t, catalog.Options{})
	tests := []struct {
		name     string
		types    []pc.ListPublicCatalogProductsRequestProductType
		apiIDs   []string
		product  string
		units    int64
		nanos    int32
		estimate bool
	}{
		{"recorded catalog DEV1-XL", []pc.ListPublicCatalogProductsRequestProductType{"instance"}, []string{"DEV1-XL"}, "DEV1-XL", 0, 65_075_999, false},
		{"recorded RENDER-S", []pc.ListPublicCatalogProductsRequestProductType{"instance"}, []string{"RENDER-S"}, "RENDER-S", 1, 221_000_000, false},
		{"products/servers PLAY2-NANO", []pc.ListPublicCatalogProductsRequestProductType{"instance"}, []string{"PLAY2-NANO"}, "PLAY2-NANO", 0, 27_540_000, false},
		{"offer EM-A116X-SSD hourly", []pc.ListPublicCatalogProductsRequestProductType{"elastic_metal"}, nil, "Elastic Metal EM-A116X-SSD", 0, 77_000_000, false},
		{"block 5K estimate", []pc.ListPublicCatalogProductsRequestProductType{"block_storage"}, nil, "Block Storage 5K IOPS", 0, 86_140_000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{
				Zone: zone("fr-par-1"), ProductTypes: tc.types, APIIDs: tc.apiIDs,
			}, scw.WithAllPages())
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			var found *pc.PublicCatalogProduct
			for _, p := range resp.Products {
				if u := p.UnitOfMeasure.Unit; p.Product == tc.product && u != pc.PublicCatalogProductUnitOfMeasureCountableUnitMonth &&
					u != pc.PublicCatalogProductUnitOfMeasureCountableUnitSetup {
					found = p
				}
				if p.Locality == nil || p.Locality.Zone == nil || *p.Locality.Zone != "fr-par-1" {
					t.Errorf("product %s not in fr-par-1: %+v", p.Sku, p.Locality)
				}
			}
			if found == nil {
				t.Fatalf("%s not listed among %d products", tc.product, len(resp.Products))
			}
			rp := found.Price.RetailPrice
			if rp.CurrencyCode != "EUR" || rp.Units != tc.units || rp.Nanos != tc.nanos {
				t.Errorf("%s price = %+v, want EUR %d.%09d", tc.product, rp, tc.units, tc.nanos)
			}
			if got := strings.Contains(found.Description, "ESTIMATE"); got != tc.estimate {
				t.Errorf("%s description %q: estimate label = %v, want %v", tc.product, found.Description, got, tc.estimate)
			}
		})
	}
}

func TestPaginationAndFilters(t *testing.T) {
	_, api := start(t, catalog.Options{Zones: []scw.Zone{"fr-par-1", "nl-ams-1"}})
	size := uint32(3)
	all, err := api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{
		Zone: zone("fr-par-1"), PageSize: &size,
		ProductTypes: []pc.ListPublicCatalogProductsRequestProductType{"instance", "elastic_metal"},
	}, scw.WithAllPages())
	if err != nil {
		t.Fatalf("list all pages: %v", err)
	}
	one, err := api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{
		Zone: zone("fr-par-1"), PageSize: &size,
		ProductTypes: []pc.ListPublicCatalogProductsRequestProductType{"instance", "elastic_metal"},
	})
	if err != nil {
		t.Fatalf("list one page: %v", err)
	}
	if len(one.Products) != 3 {
		t.Errorf("page_size=3 gave %d products", len(one.Products))
	}
	if int(one.TotalCount) != len(all.Products) || len(all.Products) < 10 {
		t.Errorf("total_count %d, all pages %d products", one.TotalCount, len(all.Products))
	}
	seen := map[string]bool{}
	for _, p := range all.Products {
		if seen[p.Sku] {
			t.Errorf("sku %s listed twice across pages", p.Sku)
		}
		seen[p.Sku] = true
		if p.Properties.BlockStorage != nil || p.Properties.ObjectStorage != nil {
			t.Errorf("product_types filter let %s through", p.Sku)
		}
	}
	r := scw.Region("fr-par")
	obj, err := api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{
		Region: &r, ProductTypes: []pc.ListPublicCatalogProductsRequestProductType{"object_storage"},
	})
	if err != nil {
		t.Fatalf("object storage: %v", err)
	}
	if obj.TotalCount != 1 || obj.Products[0].Price.RetailPrice.Nanos != 14_600_000 || obj.Products[0].UnitOfMeasure.Unit != "gigabyte" {
		t.Errorf("object storage fr-par = %d products, first %+v", obj.TotalCount, obj.Products)
	}
}

func TestDownAndOmit(t *testing.T) {
	c, api := start(t, catalog.Options{})
	req := func() (*pc.ListPublicCatalogProductsResponse, error) {
		return api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{
			Zone: zone("fr-par-1"), APIIDs: []string{"PLAY2-NANO"},
		})
	}
	c.SetDown(true)
	_, err := req()
	var se *scw.ResponseError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("down catalog: err = %v, want a 503 ResponseError", err)
	}
	c.SetDown(false)
	if resp, err := req(); err != nil || resp.TotalCount != 1 {
		t.Fatalf("back up: %v, %+v", err, resp)
	}
	c.Omit("PLAY2-NANO")
	if resp, err := req(); err != nil || resp.TotalCount != 0 {
		t.Fatalf("omitted: %v, %+v", err, resp)
	}
	if n := c.SetStatus("DEV1-XL", pc.PublicCatalogProductStatusEndOfSale); n == 0 {
		t.Fatal("SetStatus changed nothing")
	}
	if c.Requests() != 3 {
		t.Errorf("Requests() = %d, want 3", c.Requests())
	}
}

func TestBadRequests(t *testing.T) {
	srv := httptest.NewServer(catalog.Handler())
	t.Cleanup(srv.Close)
	tests := []struct {
		method, path string
		code         int
	}{
		{"GET", catalog.Path + "?page=0", 400},
		{"GET", catalog.Path + "?page_size=x", 400},
		{"GET", catalog.Path + "?product_types=spaceship", 400},
		{"POST", catalog.Path, 405},
		{"GET", "/product-catalog/v2alpha1/other", 404},
		{"GET", catalog.Path + "?page=99", 200},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
	}
}

// TestRecordedShapes: the answers have the shapes of the recorded catalog
// (scaleway-cli's test-server-type-list-on-fr-par1 and
// test-baremetal-list-offer-simple cassettes).
func TestRecordedShapes(t *testing.T) {
	_, api := start(t, catalog.Options{})
	list := func(t *testing.T, typ pc.ListPublicCatalogProductsRequestProductType) *pc.ListPublicCatalogProductsResponse {
		t.Helper()
		// No page_size and no WithAllPages: what one plain call gets.
		resp, err := api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{
			Zone: zone("fr-par-1"), ProductTypes: []pc.ListPublicCatalogProductsRequestProductType{typ}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	t.Run("instance: 96 on one page, no IP", func(t *testing.T) {
		resp := list(t, "instance")
		if resp.TotalCount != 96 || len(resp.Products) != 96 {
			t.Errorf("%d products of %d, want the 96 recorded on page 1", len(resp.Products), resp.TotalCount)
		}
		for _, p := range resp.Products {
			if p.Properties == nil || p.Properties.Instance == nil || p.Properties.Instance.OfferID != p.Product {
				t.Errorf("%s: not an Instance type (properties %+v)", p.Sku, p.Properties)
			}
			if strings.Contains(strings.ToLower(p.Product), "ip") && !strings.Contains(p.Product, "-") {
				t.Errorf("%s: the recorded instance listing holds no IP", p.Product)
			}
		}
	})
	t.Run("elastic metal: named Elastic Metal, offer UUIDs, setup fee", func(t *testing.T) {
		resp := list(t, "elastic_metal")
		if resp.TotalCount != 83 {
			t.Errorf("%d products, want the 83 recorded", resp.TotalCount)
		}
		want := map[pc.PublicCatalogProductUnitOfMeasureCountableUnit]struct {
			offer, sku string
			units      int64
			nanos      int32
		}{
			"hour":  {"8779d2c1-cd10-4a34-a006-cb5b1fb5cbc7", "/baremetal/em-a116x-ssd/hourly/run_par1", 0, 77_000_000},
			"month": {"7b3dae29-0658-4351-b8a7-7b97aef6efc2", "/baremetal/em-a116x-ssd/monthly/run_par1", 27, 990_000_000},
			"setup": {"7b3dae29-0658-4351-b8a7-7b97aef6efc2", "/baremetal/em-a116x-ssd/monthly/run_par1/fees", 27, 990_000_000},
		}
		got := 0
		for _, p := range resp.Products {
			if p.Product != "Elastic Metal EM-A116X-SSD" {
				continue
			}
			got++
			w, ok := want[p.UnitOfMeasure.Unit]
			if !ok || p.Properties.ElasticMetal.OfferID != w.offer || p.Sku != w.sku ||
				p.Price.RetailPrice.Units != w.units || p.Price.RetailPrice.Nanos != w.nanos {
				t.Errorf("%s %s: offer %s price %+v", p.Sku, p.UnitOfMeasure.Unit, p.Properties.ElasticMetal.OfferID, p.Price.RetailPrice)
			}
		}
		if got != 3 {
			t.Errorf("%d EM-A116X-SSD products, want hour, month and setup", got)
		}
	})
	t.Run("a plain call on every zonal type gets one page", func(t *testing.T) {
		resp, err := api.ListPublicCatalogProducts(&pc.PublicCatalogAPIListPublicCatalogProductsRequest{Zone: zone("fr-par-1")})
		if err != nil {
			t.Fatal(err)
		}
		if int(resp.TotalCount) <= len(resp.Products) || len(resp.Products) != catalog.DefaultPageSize {
			t.Errorf("%d products of %d: a caller that does not page must miss some", len(resp.Products), resp.TotalCount)
		}
	})
}
