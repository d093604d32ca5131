package cost

import (
	"context"
	"fmt"
	"strings"
	"time"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	catalog "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// API sources leave Price.Date empty: the Quoter stamps it with the quote's
// date, the day the price was read.
const today = ""

func zonesOf(items []Item, keep func(Item) bool) []scw.Zone {
	seen := map[scw.Zone]bool{}
	var out []scw.Zone
	for _, it := range items {
		if keep(it) && !seen[it.Zone] {
			seen[it.Zone] = true
			out = append(out, it.Zone)
		}
	}
	return out
}

// CatalogSource reads Scaleway's public product catalog
// (product_catalog/v2alpha1 ListPublicCatalogProducts), one paginated listing
// per zone for instance, elastic_metal and block_storage and one per region
// for object_storage.
type CatalogSource struct {
	Client *scw.Client
	// Now is compared with a product's end_of_sale_at (default time.Now).
	Now func() time.Time
}

// Name implements Source.
func (CatalogSource) Name() SourceName { return SourceCatalog }

// Prices implements Source.
func (c CatalogSource) Prices(ctx context.Context, items []Item) ([]Price, error) {
	api := catalog.NewPublicCatalogAPI(c.Client)
	byZone := map[scw.Zone][]*catalog.PublicCatalogProduct{}
	byRegion := map[scw.Region][]*catalog.PublicCatalogProduct{}
	for _, z := range zonesOf(items, func(it Item) bool { return it.Kind != KindObjectStorage }) {
		z := z
		resp, err := api.ListPublicCatalogProducts(&catalog.PublicCatalogAPIListPublicCatalogProductsRequest{
			Zone: &z,
			ProductTypes: []catalog.ListPublicCatalogProductsRequestProductType{
				catalog.ListPublicCatalogProductsRequestProductTypeInstance,
				catalog.ListPublicCatalogProductsRequestProductTypeElasticMetal,
				catalog.ListPublicCatalogProductsRequestProductTypeBlockStorage,
			},
		}, scw.WithContext(ctx), scw.WithAllPages())
		if err != nil {
			return nil, fmt.Errorf("list public catalog products in %s: %w", z, err)
		}
		byZone[z] = resp.Products
	}
	for _, z := range zonesOf(items, func(it Item) bool { return it.Kind == KindObjectStorage }) {
		r, err := z.Region()
		if err != nil {
			return nil, fmt.Errorf("object storage item in zone %q: %w", z, err)
		}
		if _, ok := byRegion[r]; ok {
			continue
		}
		resp, err := api.ListPublicCatalogProducts(&catalog.PublicCatalogAPIListPublicCatalogProductsRequest{
			Region:       &r,
			ProductTypes: []catalog.ListPublicCatalogProductsRequestProductType{catalog.ListPublicCatalogProductsRequestProductTypeObjectStorage},
		}, scw.WithContext(ctx), scw.WithAllPages())
		if err != nil {
			return nil, fmt.Errorf("list public catalog object storage products in %s: %w", r, err)
		}
		byRegion[r] = resp.Products
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	date := today
	out := make([]Price, len(items))
	for i, it := range items {
		products := byZone[it.Zone]
		if it.Kind == KindObjectStorage {
			r, _ := it.Zone.Region()
			products = byRegion[r]
		}
		out[i] = catalogPrice(it, products, now(), date)
	}
	return out, nil
}

// catalogPrice finds the products of an item and its price: the product
// priced per unit of time (hour, minute; per GB and hour or month for sized
// items), and for Elastic Metal the monthly subscription and its setup fee.
func catalogPrice(it Item, products []*catalog.PublicCatalogProduct, now time.Time, date string) Price {
	var usage, monthly, setup *catalog.PublicCatalogProduct
	for _, p := range products {
		if p == nil || !catalogMatches(it, p) || p.UnitOfMeasure == nil {
			continue
		}
		switch {
		case usageUnit(it, p.UnitOfMeasure.Unit) != "":
			if usage == nil {
				usage = p
			}
		case it.Kind == KindBaremetal && p.UnitOfMeasure.Unit == catalog.PublicCatalogProductUnitOfMeasureCountableUnitMonth:
			if monthly == nil {
				monthly = p
			}
		case it.Kind == KindBaremetal && p.UnitOfMeasure.Unit == catalog.PublicCatalogProductUnitOfMeasureCountableUnitSetup:
			if setup == nil {
				setup = p
			}
		}
	}
	if usage == nil {
		return Price{Availability: Missing, Source: SourceCatalog, Note: "not in the catalog"}
	}
	price := catalogProductPrice(it, usage, now, date)
	if monthly != nil && price.IsKnown() {
		s := catalogProductPrice(it, monthly, now, date)
		if s.IsKnown() {
			// The setup product is the monthly offer's (its offer_id is the
			// monthly offer's UUID): an hourly worker pays no setup fee.
			if setup != nil && setup.Properties != nil && setup.Properties.ElasticMetal != nil && monthly.Properties != nil &&
				monthly.Properties.ElasticMetal != nil && setup.Properties.ElasticMetal.OfferID == monthly.Properties.ElasticMetal.OfferID {
				if f := catalogProductPrice(it, setup, now, date); f.IsKnown() {
					s.Fee = f.Amount
				}
			}
			price.Subscription = &s
		}
	}
	return price
}

// usageUnit is the price unit a catalog unit of measure gives an item, ""
// when it prices no usage of that item (a subscription, a setup fee, or a
// unit this package cannot turn into an hourly amount).
func usageUnit(it Item, u catalog.PublicCatalogProductUnitOfMeasureCountableUnit) Unit {
	switch u {
	case catalog.PublicCatalogProductUnitOfMeasureCountableUnitHour, catalog.PublicCatalogProductUnitOfMeasureCountableUnitMinute:
		if !it.Kind.sized() {
			return PerHour
		}
	case catalog.PublicCatalogProductUnitOfMeasureCountableUnitGigabyteHour:
		if it.Kind.sized() {
			return PerGBHour
		}
	case catalog.PublicCatalogProductUnitOfMeasureCountableUnitGigabyte:
		// Storage is billed per GB and month: a bare "gigabyte" is per month.
		if it.Kind.sized() {
			return PerGBMonth
		}
	}
	return ""
}

func catalogProductPrice(it Item, p *catalog.PublicCatalogProduct, now time.Time, date string) Price {
	out := Price{Source: SourceCatalog, Date: date, Ref: p.Sku}
	if withdrawnStatus(p.Status) || (p.EndOfSaleAt != nil && !p.EndOfSaleAt.After(now)) {
		out.Availability = Withdrawn
		out.Note = fmt.Sprintf("catalog status %s", p.Status)
		if p.EndOfSaleAt != nil {
			out.Note += ", end of sale " + p.EndOfSaleAt.UTC().Format(time.DateOnly)
		}
		return out
	}
	if p.Price == nil || p.Price.RetailPrice == nil {
		out.Note = "catalog product without retail price"
		return out
	}
	m, err := FromSCW(p.Price.RetailPrice)
	if err != nil || m.currency() != CurrencyEUR {
		out.Note = fmt.Sprintf("unusable catalog price (%v, currency %s)", err, m.currency())
		return out
	}
	unit := p.UnitOfMeasure.Unit
	if it.Kind.Compute() && m.Nanos <= 0 && unit != catalog.PublicCatalogProductUnitOfMeasureCountableUnitSetup {
		// A free server is an API glitch, not a price: never count it as 0.
		out.Note = "catalog gives a zero price for a compute item"
		return out
	}
	if size := p.UnitOfMeasure.Size; size > 1 {
		m = m.MulRat(1, int64(size))
	}
	switch unit {
	case catalog.PublicCatalogProductUnitOfMeasureCountableUnitMonth:
		out.Unit = PerMonth
	case catalog.PublicCatalogProductUnitOfMeasureCountableUnitSetup:
		out.Unit = "" // a one-time amount: the caller makes it a Fee
	case catalog.PublicCatalogProductUnitOfMeasureCountableUnitMinute:
		m, out.Unit = m.Mul(60), PerHour
	default:
		out.Unit = usageUnit(it, unit)
		if out.Unit == "" {
			out.Note = fmt.Sprintf("catalog unit %s does not fit %s", unit, it.Label())
			return out
		}
	}
	out.Amount = m
	out.Availability = Known
	return out
}

func withdrawnStatus(s catalog.PublicCatalogProductStatus) bool {
	switch s {
	case catalog.PublicCatalogProductStatusEndOfSale, catalog.PublicCatalogProductStatusEndOfLife, catalog.PublicCatalogProductStatusRetired:
		return true
	}
	return false
}

func catalogMatches(it Item, p *catalog.PublicCatalogProduct) bool {
	props := p.Properties
	if props == nil {
		props = &catalog.PublicCatalogProductProperties{}
	}
	name := strings.ToLower(p.Product + " " + p.Variant)
	switch it.Kind {
	case KindInstance:
		return props.Instance != nil && (props.Instance.OfferID == it.SKU || p.Product == it.SKU)
	case KindBaremetal:
		// The catalog names the offer "Elastic Metal EM-A116X-SSD" (with its own
		// case: "EM-I215E-NVMe" for the API's EM-I215E-NVME) and gives the
		// offer's UUID as offer_id.
		return props.ElasticMetal != nil && strings.EqualFold(strings.TrimPrefix(p.Product, "Elastic Metal "), it.SKU)
	case KindBlockVolume:
		bs := props.BlockStorage
		return bs != nil && bs.Volume != nil && mentionsIOPS(name, it.IOPS)
	case KindSnapshot:
		return props.BlockStorage != nil && props.BlockStorage.Snapshot != nil
	case KindObjectStorage:
		os := props.ObjectStorage
		return os != nil && os.Class != nil && os.Class.StorageClass == catalog.PublicCatalogProductPropertiesObjectStorageClassTypeStorageClassStandard
	case KindIP:
		return props.Instance == nil && strings.Contains(name, "ipv4")
	}
	return false
}

// InstanceSource reads Instance products/servers (hourly_price per
// commercial type). It prices Instance items only.
type InstanceSource struct {
	Client *scw.Client
}

// Name implements Source.
func (InstanceSource) Name() SourceName { return SourceInstance }

// Prices implements Source.
func (s InstanceSource) Prices(ctx context.Context, items []Item) ([]Price, error) {
	api := instance.NewAPI(s.Client)
	list := func(z scw.Zone) (map[string]*instance.ServerType, error) {
		resp, err := api.ListServersTypes(&instance.ListServersTypesRequest{Zone: z}, scw.WithContext(ctx), scw.WithAllPages())
		if err != nil {
			return nil, fmt.Errorf("list instance server types in %s: %w", z, err)
		}
		return resp.Servers, nil
	}
	return priceEach(items, KindInstance, list, func(it Item, types map[string]*instance.ServerType) Price {
		st := types[it.SKU]
		p := Price{Source: SourceInstance, Date: today, Ref: "products/servers:" + it.SKU}
		switch {
		case st == nil:
			p.Note = "commercial type not listed in " + string(it.Zone)
		case st.EndOfService:
			p.Availability = Withdrawn
			p.Note = "end_of_service"
		default:
			m, err := FromFloat(CurrencyEUR, float64(st.HourlyPrice), 32)
			if err != nil || m.Nanos <= 0 {
				p.Note = fmt.Sprintf("unusable hourly_price %v", st.HourlyPrice)
				break
			}
			p.Availability, p.Amount, p.Unit = Known, m, PerHour
		}
		return p
	})
}

// priceEach lists what the items of kind need once per zone, then prices each of them from its
// zone's list; the other items are left zero (another source prices them).
func priceEach[L any](items []Item, kind Kind, list func(scw.Zone) (L, error), price func(Item, L) Price) ([]Price, error) {
	lists := map[scw.Zone]L{}
	for _, z := range zonesOf(items, func(it Item) bool { return it.Kind == kind }) {
		l, err := list(z)
		if err != nil {
			return nil, err
		}
		lists[z] = l
	}
	out := make([]Price, len(items))
	for i, it := range items {
		if it.Kind == kind {
			out[i] = price(it, lists[it.Zone])
		}
	}
	return out, nil
}

// BaremetalSource reads Elastic Metal offers: price_per_hour and setup fee of
// the hourly offer, and price_per_month of its monthly_offer_id when the API
// has it. It prices Elastic Metal items only.
type BaremetalSource struct {
	Client *scw.Client
}

// Name implements Source.
func (BaremetalSource) Name() SourceName { return SourceBaremetal }

// Prices implements Source.
func (s BaremetalSource) Prices(ctx context.Context, items []Item) ([]Price, error) {
	api := baremetal.NewAPI(s.Client)
	list := func(z scw.Zone) ([]*baremetal.Offer, error) {
		resp, err := api.ListOffers(&baremetal.ListOffersRequest{Zone: z, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly}, scw.WithContext(ctx), scw.WithAllPages())
		if err != nil {
			return nil, fmt.Errorf("list Elastic Metal offers in %s: %w", z, err)
		}
		return resp.Offers, nil
	}
	return priceEach(items, KindBaremetal, list, func(it Item, offers []*baremetal.Offer) Price {
		var o *baremetal.Offer
		for _, c := range offers {
			if c != nil && c.Name == it.SKU && c.SubscriptionPeriod == baremetal.OfferSubscriptionPeriodHourly {
				o = c
				break
			}
		}
		p := Price{Source: SourceBaremetal, Date: today}
		if o == nil {
			p.Note = "no hourly offer named " + it.SKU + " in " + string(it.Zone)
			return p
		}
		p.Ref = "offer:" + o.ID
		if !o.Enable {
			p.Availability, p.Note = Withdrawn, "offer disabled"
			return p
		}
		m, err := FromSCW(o.PricePerHour)
		if err != nil || m.currency() != CurrencyEUR || m.Nanos <= 0 {
			p.Note = fmt.Sprintf("unusable price_per_hour (%v)", err)
			return p
		}
		p.Availability, p.Amount, p.Unit = Known, m, PerHour
		if o.Fee != nil {
			if fee, err := FromSCW(o.Fee); err == nil && fee.currency() == CurrencyEUR {
				p.Fee = fee
			}
		}
		if o.MonthlyOfferID != nil && *o.MonthlyOfferID != "" {
			if sub := s.monthly(ctx, api, it.Zone, *o.MonthlyOfferID, today); sub != nil {
				p.Subscription = sub
			}
		}
		return p
	})
}

// monthly reads the monthly offer; its absence only drops the alternative.
func (s BaremetalSource) monthly(ctx context.Context, api *baremetal.API, zone scw.Zone, id, date string) *Price {
	o, err := api.GetOffer(&baremetal.GetOfferRequest{Zone: zone, OfferID: id}, scw.WithContext(ctx))
	if err != nil || o == nil || !o.Enable || o.PricePerMonth == nil {
		return nil
	}
	m, err := FromSCW(o.PricePerMonth)
	if err != nil || m.currency() != CurrencyEUR || m.Nanos <= 0 {
		return nil
	}
	p := &Price{Availability: Known, Amount: m, Unit: PerMonth, Source: SourceBaremetal, Date: date, Ref: "offer:" + o.ID}
	if fee, err := FromSCW(o.Fee); err == nil && fee.currency() == CurrencyEUR {
		p.Fee = fee
	}
	return p
}

// APISources returns the API sources followed by the dated table, the
// order a Quoter should try them in.
func APISources(client *scw.Client) []Source {
	return []Source{CatalogSource{Client: client}, InstanceSource{Client: client}, BaremetalSource{Client: client}, TableSource{}}
}

// mentionsIOPS reports whether a product name names the IOPS class, as
// "5K" / "5k iops" / "sbs_5k" — but "15K" does not name 5K.
func mentionsIOPS(name string, iops uint32) bool {
	want := strings.ToLower(iopsLabel(iops))
	for i := 0; ; {
		j := strings.Index(name[i:], want)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || name[j-1] < '0' || name[j-1] > '9'
		end := j + len(want)
		after := end == len(name) || name[end] < '0' || name[end] > '9'
		if before && after {
			return true
		}
		i = j + 1
	}
}
