package cost_test

import (
	"testing"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
)

func TestMoneyConversions(t *testing.T) {
	tests := []struct {
		name string
		got  func() (cost.Money, error)
		want cost.Money
	}{
		{"scw money 0.077", func() (cost.Money, error) { return cost.FromSCW(&scw.Money{CurrencyCode: "EUR", Nanos: 77_000_000}) }, cost.EUR(0, 77_000_000)},
		{"scw money 9.589", func() (cost.Money, error) {
			return cost.FromSCW(&scw.Money{CurrencyCode: "EUR", Units: 9, Nanos: 589_000_000})
		}, cost.EUR(9, 589_000_000)},
		{"decimal 27.99", func() (cost.Money, error) { return cost.ParseDecimal("EUR", "27.99") }, cost.EUR(27, 990_000_000)},
		{"decimal 0.065075999", func() (cost.Money, error) { return cost.ParseDecimal("EUR", "0.065075999") }, cost.EUR(0, 65_075_999)},
		{"decimal ten digits rounds half even down", func() (cost.Money, error) { return cost.ParseDecimal("EUR", "0.0000000025") }, cost.EUR(0, 2)},
		{"decimal ten digits rounds half even up", func() (cost.Money, error) { return cost.ParseDecimal("EUR", "0.0000000035") }, cost.EUR(0, 4)},
		{"float32 hourly_price 0.02754 is exact", func() (cost.Money, error) { return cost.FromFloat("EUR", float64(float32(0.02754)), 32) }, cost.EUR(0, 27_540_000)},
		{"float32 0.065076", func() (cost.Money, error) { return cost.FromFloat("EUR", float64(float32(0.065076)), 32) }, cost.EUR(0, 65_076_000)},
		{"float64 20.1042", func() (cost.Money, error) { return cost.FromFloat("EUR", 20.1042, 64) }, cost.EUR(20, 104_200_000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if err != nil || got != tc.want {
				t.Errorf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
	for _, bad := range []*scw.Money{nil, {Units: 1}, {CurrencyCode: "EUR", Units: 1, Nanos: -5}, {CurrencyCode: "EUR", Nanos: 1_000_000_000}} {
		if _, err := cost.FromSCW(bad); err == nil {
			t.Errorf("FromSCW(%+v) accepted", bad)
		}
	}
	for _, bad := range []string{"", "abc", "1/3", "1e3", "99999999999999999999"} {
		if _, err := cost.ParseDecimal("EUR", bad); err == nil {
			t.Errorf("ParseDecimal(%q) accepted", bad)
		}
	}
	if m := cost.EUR(9, 589_000_000).SCW(); m.Units != 9 || m.Nanos != 589_000_000 || m.CurrencyCode != "EUR" {
		t.Errorf("SCW() = %+v", m)
	}
}

func TestMoneyArithmeticIsExact(t *testing.T) {
	nano := cost.EUR(0, 27_540_000)
	// 0.1 + 0.2 style traps: thousands of additions stay exact.
	sum := cost.EUR(0, 0)
	for range 730 {
		sum = sum.Add(nano)
	}
	if sum != nano.Mul(730) || sum != cost.EUR(20, 104_200_000) {
		t.Errorf("730 × 0.02754 = %s, want 20.1042", sum)
	}
	tests := []struct {
		name string
		got  cost.Money
		want cost.Money
	}{
		{"3 × nano × 24", nano.Mul(3).Mul(24), cost.EUR(1, 982_880_000)},
		{"per GB-hour × 20 GB", cost.EUR(0, 118_000).MulRat(20*cost.GB, cost.GB), cost.EUR(0, 2_360_000)},
		{"0.0146/730 exact", cost.EUR(0, 14_600_000).MulRat(1, 730), cost.EUR(0, 20_000)},
		{"27.99/730 rounds half even", cost.EUR(27, 990_000_000).MulRat(1, 730), cost.EUR(0, 38_342_466)},
		{"half-even tie down", cost.Money{Currency: "EUR", Nanos: 5}.MulRat(1, 2), cost.Money{Currency: "EUR", Nanos: 2}},
		{"half-even tie up", cost.Money{Currency: "EUR", Nanos: 7}.MulRat(1, 2), cost.Money{Currency: "EUR", Nanos: 4}},
		{"negative tie", cost.Money{Currency: "EUR", Nanos: -7}.MulRat(1, 2), cost.Money{Currency: "EUR", Nanos: -4}},
		{"sub", cost.EUR(1, 0).Sub(cost.EUR(0, 1)), cost.EUR(0, 999_999_999)},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

func TestMoneyFormat(t *testing.T) {
	tests := []struct {
		m        cost.Money
		decimals int
		want     string
	}{
		{cost.EUR(4, 299_840_000), 2, "€ 4.30"},
		{cost.EUR(0, 5_000_000), 2, "€ 0.01"}, // half away from zero
		{cost.EUR(0, 4_999_999), 2, "€ 0.00"},
		{cost.EUR(0, 15_000_000), 2, "€ 0.02"},
		{cost.EUR(0, 25_000_000), 2, "€ 0.03"},
		{cost.EUR(0, 27_540_000), 5, "€ 0.02754"},
		{cost.EUR(0, 27_540_000), 4, "€ 0.0275"},
		{cost.EUR(12, 0), 2, "€ 12.00"},
		{cost.EUR(12, 0), 0, "€ 12"},
		{cost.Money{Currency: "EUR", Nanos: -5_000_000}, 2, "€ -0.01"},
		{cost.Money{Currency: "USD", Nanos: 1_500_000_000}, 2, "USD 1.50"},
	}
	for _, tc := range tests {
		if got := tc.m.Format(tc.decimals); got != tc.want {
			t.Errorf("Format(%d) of %d nanos = %q, want %q", tc.decimals, tc.m.Nanos, got, tc.want)
		}
	}
	if got := cost.EUR(0, 65_075_999).String(); got != "€ 0.065075999" {
		t.Errorf("String() = %q", got)
	}
	if got := cost.EUR(3, 0).String(); got != "€ 3.00" {
		t.Errorf("String() = %q", got)
	}
}

func TestMoneyGuards(t *testing.T) {
	tests := map[string]func(){
		"currency mix": func() { cost.EUR(1, 0).Add(cost.Money{Currency: "USD", Nanos: 1}) },
		"overflow mul": func() { cost.EUR(1_000_000_000, 0).Mul(1_000_000_000) },
		"overflow add": func() { cost.EUR(9_000_000_000, 0).Add(cost.EUR(9_000_000_000, 0)) },
		"div by zero":  func() { cost.EUR(1, 0).MulRat(1, 0) },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		})
	}
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0.02754", "27.99", "-1.5", "0.0000000005", "abc", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := cost.ParseDecimal("EUR", s)
		if err != nil {
			return
		}
		// Printing exactly and parsing again is the identity.
		back, err := cost.ParseDecimal("EUR", m.Decimal(0))
		if err != nil || back != m {
			t.Fatalf("%q → %d nanos → %q → %d (%v)", s, m.Nanos, m.Decimal(0), back.Nanos, err)
		}
	})
}
