package cost

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/scaleway/scaleway-sdk-go/scw"
)

// nanosPerUnit is the number of nano-units in one currency unit (one euro).
const nanosPerUnit = 1_000_000_000

// CurrencyEUR is the only currency Scaleway's public prices use.
const CurrencyEUR = "EUR"

// Money is an exact amount: Nanos billionths of one unit of Currency.
// The zero value is zero euros. int64 nanos cap amounts at about 9.2 billion
// euros, far above anything a proof-of-concept cluster can cost; crossing it
// panics rather than wrapping silently.
type Money struct {
	Currency string
	Nanos    int64
}

// EUR builds an amount from whole euros and nano-euros, like scw.Money.
func EUR(units, nanos int64) Money {
	return Money{Currency: CurrencyEUR, Nanos: mustAdd(mustMul(units, nanosPerUnit), nanos)}
}

// FromSCW converts a Scaleway Money (units + nanos) exactly.
func FromSCW(m *scw.Money) (Money, error) {
	if m == nil {
		return Money{}, errors.New("no amount (null money)")
	}
	if m.CurrencyCode == "" {
		return Money{}, errors.New("money without currency code")
	}
	if (m.Units > 0 && m.Nanos < 0) || (m.Units < 0 && m.Nanos > 0) || m.Nanos <= -nanosPerUnit || m.Nanos >= nanosPerUnit {
		return Money{}, fmt.Errorf("inconsistent money units=%d nanos=%d", m.Units, m.Nanos)
	}
	if m.Units > math.MaxInt64/nanosPerUnit-1 || m.Units < math.MinInt64/nanosPerUnit+1 {
		return Money{}, fmt.Errorf("money out of range: units=%d", m.Units)
	}
	return Money{Currency: m.CurrencyCode, Nanos: m.Units*nanosPerUnit + int64(m.Nanos)}, nil
}

// SCW converts back to a Scaleway Money.
func (m Money) SCW() *scw.Money {
	return &scw.Money{CurrencyCode: m.currency(), Units: m.Nanos / nanosPerUnit, Nanos: int32(m.Nanos % nanosPerUnit)}
}

// ParseDecimal reads a decimal amount such as "0.02754" or "27.99".
// More than nine fractional digits are rounded half to even to the nano.
func ParseDecimal(currency, s string) (Money, error) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok || strings.ContainsAny(s, "/eE") {
		return Money{}, fmt.Errorf("%q is not a decimal amount", s)
	}
	n, err := ratToNanos(r)
	if err != nil {
		return Money{}, fmt.Errorf("amount %q: %w", s, err)
	}
	return Money{Currency: currency, Nanos: n}, nil
}

// FromFloat converts a price the Instance API gives as a JSON float (e.g.
// hourly_price 0.02754, decoded by the SDK into a float32). The float is first
// printed in its shortest exact-round-trip decimal form for its bit size, so
// 0.02754 becomes exactly 27 540 000 nanos instead of float32 noise.
func FromFloat(currency string, f float64, bitSize int) (Money, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Money{}, fmt.Errorf("price %v is not a number", f)
	}
	return ParseDecimal(currency, strconv.FormatFloat(f, 'f', -1, bitSize))
}

func ratToNanos(r *big.Rat) (int64, error) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt64(nanosPerUnit))
	q := roundHalfEven(scaled)
	if !q.IsInt64() {
		return 0, errors.New("out of range")
	}
	return q.Int64(), nil
}

// roundHalfEven rounds a rational to the nearest integer, ties to even.
func roundHalfEven(r *big.Rat) *big.Int {
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int)) // truncated toward zero
	if m.Sign() == 0 {
		return q
	}
	twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
	cmp := twice.Cmp(den)
	if cmp > 0 || (cmp == 0 && q.Bit(0) == 1) {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

func (m Money) currency() string {
	if m.Currency == "" {
		return CurrencyEUR
	}
	return m.Currency
}

// IsZero reports whether the amount is zero.
func (m Money) IsZero() bool { return m.Nanos == 0 }

// Add returns m+o. Both must be in the same currency (a zero-value Money
// counts as euros); mixing currencies is a programming error and panics,
// since every Source rejects non-euro prices at its boundary.
func (m Money) Add(o Money) Money {
	if m.currency() != o.currency() {
		panic(fmt.Sprintf("cost: adding %s to %s", o.currency(), m.currency()))
	}
	return Money{Currency: m.currency(), Nanos: mustAdd(m.Nanos, o.Nanos)}
}

// Sub returns m-o (same currency rule as Add).
func (m Money) Sub(o Money) Money {
	return m.Add(Money{Currency: o.Currency, Nanos: -o.Nanos})
}

// Mul multiplies by an integer (a count, or whole hours): exact.
func (m Money) Mul(n int64) Money {
	return Money{Currency: m.currency(), Nanos: mustMul(m.Nanos, n)}
}

// MulRat multiplies by num/den and rounds half to even to the nano-euro.
// Used for a per-GB price times a size in bytes (num=bytes, den=1e9) and for a
// per-month price spread over 730 hours (num=1, den=730).
func (m Money) MulRat(num, den int64) Money {
	if den == 0 {
		panic("cost: MulRat by x/0")
	}
	r := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(m.Nanos), big.NewInt(num)), big.NewInt(den))
	q := roundHalfEven(r)
	if !q.IsInt64() {
		panic("cost: money overflow in MulRat")
	}
	return Money{Currency: m.currency(), Nanos: q.Int64()}
}

// Cmp compares two amounts of the same currency: -1, 0 or +1.
func (m Money) Cmp(o Money) int {
	if m.currency() != o.currency() {
		panic(fmt.Sprintf("cost: comparing %s with %s", o.currency(), m.currency()))
	}
	switch {
	case m.Nanos < o.Nanos:
		return -1
	case m.Nanos > o.Nanos:
		return 1
	}
	return 0
}

// Decimal prints the exact amount with at least minDecimals fractional
// digits and no trailing zeros beyond them, e.g. "0.02754" (min 2).
// Nothing is rounded.
func (m Money) Decimal(minDecimals int) string {
	neg := m.Nanos < 0
	n := m.Nanos
	var u uint64
	if neg {
		u = uint64(-(n + 1)) + 1
	} else {
		u = uint64(n)
	}
	frac := fmt.Sprintf("%09d", u%nanosPerUnit)
	frac = strings.TrimRight(frac, "0")
	for len(frac) < minDecimals {
		frac += "0"
	}
	s := strconv.FormatUint(u/nanosPerUnit, 10)
	if frac != "" {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Round returns the amount rounded to the given number of decimals, half
// away from zero (what an invoice does: 0.005 → 0.01).
func (m Money) Round(decimals int) Money {
	if decimals >= 9 {
		return m
	}
	step := int64(1)
	for i := decimals; i < 9; i++ {
		step *= 10
	}
	q, r := m.Nanos/step, m.Nanos%step
	if r < 0 {
		r = -r
	}
	if r*2 >= step {
		if m.Nanos < 0 {
			q--
		} else {
			q++
		}
	}
	return Money{Currency: m.currency(), Nanos: mustMul(q, step)}
}

// Format prints "€ 4.12": rounded half away from zero to the given decimals,
// with the currency sign. Rounding happens here and only here.
func (m Money) Format(decimals int) string {
	r := m.Round(decimals)
	d := r.Decimal(decimals)
	if i := strings.IndexByte(d, '.'); i >= 0 && decimals >= 0 && len(d)-i-1 > decimals {
		d = d[:i+1+decimals]
	}
	d = strings.TrimSuffix(d, ".")
	sign := r.currency() + " "
	if r.currency() == CurrencyEUR {
		sign = "€ "
	}
	return sign + d
}

// String prints the exact amount, e.g. "€ 0.02754".
func (m Money) String() string {
	if m.currency() == CurrencyEUR {
		return "€ " + m.Decimal(2)
	}
	return m.currency() + " " + m.Decimal(2)
}

func mustAdd(a, b int64) int64 {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		panic("cost: money overflow")
	}
	return s
}

func mustMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		panic("cost: money overflow")
	}
	return p
}
