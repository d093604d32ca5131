package cost

import (
	"testing"
	"time"

	catalog "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// TestCatalogUnits: each unit of measure the real catalog uses becomes the
// right amount per the right unit, in integer nano-euros.
func TestCatalogUnits(t *testing.T) {
	product := func(name, unit string, units int64, nanos int32, props *catalog.PublicCatalogProductProperties) *catalog.PublicCatalogProduct {
		return &catalog.PublicCatalogProduct{Sku: "/x/" + name + "/" + unit, Product: name, Variant: name,
			Price:         &catalog.PublicCatalogProductPrice{RetailPrice: &scw.Money{CurrencyCode: "EUR", Units: units, Nanos: nanos}},
			UnitOfMeasure: &catalog.PublicCatalogProductUnitOfMeasure{Unit: catalog.PublicCatalogProductUnitOfMeasureCountableUnit(unit), Size: 1},
			Status:        catalog.PublicCatalogProductStatusGeneralAvailability, Properties: props}
	}
	inst := func(name string) *catalog.PublicCatalogProductProperties {
		return &catalog.PublicCatalogProductProperties{Instance: &catalog.PublicCatalogProductPropertiesInstance{OfferID: name}}
	}
	em := func(offer string) *catalog.PublicCatalogProductProperties {
		return &catalog.PublicCatalogProductProperties{ElasticMetal: &catalog.PublicCatalogProductPropertiesElasticMetal{OfferID: offer}}
	}
	vol := &catalog.PublicCatalogProductProperties{BlockStorage: &catalog.PublicCatalogProductPropertiesBlockStorage{Volume: &catalog.PublicCatalogProductPropertiesBlockStorageVolumeType{}}}
	tests := []struct {
		name     string
		item     Item
		products []*catalog.PublicCatalogProduct
		amount   Money
		unit     Unit
		fee      Money // of the subscription
		sub      Money
	}{
		{"instance per hour", Item{Kind: KindInstance, SKU: "PLAY2-NANO"},
			[]*catalog.PublicCatalogProduct{product("PLAY2-NANO", "hour", 0, 27_540_000, inst("PLAY2-NANO"))}, EUR(0, 27_540_000), PerHour, Money{}, Money{}},
		{"instance per minute", Item{Kind: KindInstance, SKU: "L4-1-24G"},
			[]*catalog.PublicCatalogProduct{product("L4-1-24G", "minute", 0, 13_125_000, inst("L4-1-24G"))}, EUR(0, 787_500_000), PerHour, Money{}, Money{}},
		{"elastic metal hour, month and setup", Item{Kind: KindBaremetal, SKU: "EM-A116X-SSD"},
			[]*catalog.PublicCatalogProduct{
				product("Elastic Metal EM-A116X-SSD", "setup", 27, 990_000_000, em("7b3dae29-0658-4351-b8a7-7b97aef6efc2")),
				product("Elastic Metal EM-A116X-SSD", "month", 27, 990_000_000, em("7b3dae29-0658-4351-b8a7-7b97aef6efc2")),
				product("Elastic Metal EM-A116X-SSD", "hour", 0, 77_000_000, em("8779d2c1-cd10-4a34-a006-cb5b1fb5cbc7")),
			}, EUR(0, 77_000_000), PerHour, EUR(27, 990_000_000), EUR(27, 990_000_000)},
		{"elastic metal name in another case", Item{Kind: KindBaremetal, SKU: "EM-I215E-NVME"},
			[]*catalog.PublicCatalogProduct{product("Elastic Metal EM-I215E-NVMe", "hour", 0, 904_000_000, em("ddb09834-8680-4339-b5e3-19ca5205fa1f"))},
			EUR(0, 904_000_000), PerHour, Money{}, Money{}},
		{"block volume per GB-hour", Item{Kind: KindBlockVolume, IOPS: 5000},
			[]*catalog.PublicCatalogProduct{product("Block Storage 5K IOPS", "gigabyte_hour", 0, 118_000, vol)}, EUR(0, 118_000), PerGBHour, Money{}, Money{}},
		{"block volume per GB (a month)", Item{Kind: KindBlockVolume, IOPS: 5000},
			[]*catalog.PublicCatalogProduct{product("Block Storage 5K IOPS", "gigabyte", 0, 86_000_000, vol)}, EUR(0, 86_000_000), PerGBMonth, Money{}, Money{}},
	}
	now := time.Date(2026, 10, 18, 0, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := catalogPrice(tc.item, tc.products, now, "")
			if !p.IsKnown() || p.Amount != tc.amount || p.Unit != tc.unit {
				t.Fatalf("price %s %s (%s), want %s %s", p.Amount, p.Unit, p.Note, tc.amount, tc.unit)
			}
			if tc.sub.IsZero() {
				if p.Subscription != nil {
					t.Errorf("subscription %+v, want none", p.Subscription)
				}
				return
			}
			if s := p.Subscription; s == nil || s.Amount != tc.sub || s.Unit != PerMonth || s.Fee != tc.fee {
				t.Errorf("subscription %+v, want %s a month, setup %s", s, tc.sub, tc.fee)
			}
		})
	}
}
