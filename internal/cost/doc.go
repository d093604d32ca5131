// Package cost owns prices and durations: what a set of Scaleway resources
// costs per hour, per day (×24), per 730-hour month, since a date and until a
// date, and whether a new cluster fits the repository's budget.
//
// It knows nothing of GitHub nor of how resources are provisioned: callers
// describe what runs (or would run) as Items, and get a Quote back.
//
// Prices come from Sources tried in order: Scaleway's public product catalog,
// the Instance products/servers list and the Elastic Metal offers (both also
// used to cross-check the catalog), and last a dated table (prices noted
// 2026-10-17, minor items as labelled estimates). Every price says where it
// comes from, when it was noted, and whether it is an estimate. A price that
// no source knows, or that a source says is withdrawn from sale, is Unknown —
// never zero. A Quoter reuses what a source answered for an item for PriceReuse (a run quotes
// the same cluster several times), and never keeps a source's failure.
//
// Money is held as integer nano-euros; nothing here uses floating point for
// amounts. Rounding happens only when printing (half away from zero, the
// rounding of an invoice) and, documented at each place, when a price per
// GB-month is turned into a price per hour.
package cost
