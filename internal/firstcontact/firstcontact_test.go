package firstcontact

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Register row job-start: a measured delay maps to its reading at docs/pool.md's 30 s and the
// two minutes of a long queue; a start before the comment (clocks apart) or an unknown time
// is no observation.
func TestJobStart(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{0, "quick"}, {12 * time.Second, "quick"}, {30 * time.Second, "quick"}, {31 * time.Second, "queued"},
		{2 * time.Minute, "queued"}, {2*time.Minute + time.Second, "slow"}, {20 * time.Minute, "slow"}} {
		n, ok := JobStart(at, at.Add(c.after))
		if !ok || n.Reading != c.want || n.Sample != c.after || n.Row != assume.JobStart {
			t.Errorf("started %s after: %+v %v, want %s", c.after, n, ok, c.want)
		}
		if _, ok := assume.MustLookup(assume.JobStart).Reading(n.Reading); !ok {
			t.Errorf("%s is no reading of the row", n.Reading)
		}
	}
	for _, c := range [][2]time.Time{{{}, at}, {at, {}}, {at, at.Add(-time.Second)}} {
		if n, ok := JobStart(c[0], c[1]); ok {
			t.Errorf("JobStart(%v, %v) = %+v, want no observation", c[0], c[1], n)
		}
	}
}

// What a row stands at: the median's reading for a measured row; one run that met a reading
// the bot does not handle is enough (a later accepted one does not hide it); else the last.
func TestSeenReading(t *testing.T) {
	o := Observations{}
	at := time.Now()
	for _, d := range []time.Duration{5 * time.Second, 50 * time.Second, 3 * time.Minute, 40 * time.Second, 70 * time.Second} {
		n, _ := JobStart(at, at.Add(d))
		o.Add(n, at)
	}
	if got := o[assume.JobStart].Reading(assume.MustLookup(assume.JobStart)); got != "queued" || o[assume.JobStart].Median() != 50*time.Second {
		t.Errorf("job-start stands at %q (median %s), want queued (50 s)", got, o[assume.JobStart].Median())
	}
	ud := assume.MustLookup(assume.UserDataCap)
	o.Add(Note{Row: assume.UserDataCap, Reading: "too-small"}, at)
	o.Add(Note{Row: assume.UserDataCap, Reading: "fits"}, at)
	if got := o[assume.UserDataCap].Reading(ud); got != "too-small" {
		t.Errorf("user-data-cap stands at %q after a refusal then an accept, want too-small", got)
	}
	pd := assume.MustLookup(assume.EMPatchDelivering)
	o.Add(Note{Row: pd.ID, Reading: "accepted"}, at)
	o.Add(Note{Row: pd.ID, Reading: "refused"}, at)
	if got := o[pd.ID].Reading(pd); got != "refused" {
		t.Errorf("em-patch-delivering stands at %q, want the last met, refused", got)
	}
	var none *Seen
	if none.Reading(pd) != "" || none.Median() != 0 {
		t.Error("a row no run met stands at a reading")
	}
	for range 2 * Keep {
		o.Add(Note{Row: assume.JobStart, Reading: "quick", Sample: time.Second}, at)
	}
	if n := len(o[assume.JobStart].Samples); n != Keep {
		t.Errorf("kept %d samples, want %d", n, Keep)
	}
}

// memStore keeps shared documents in memory; conflicts, when set, refuse that many writes first.
type memStore struct {
	docs      map[string][]byte
	conflicts int
}

func (m *memStore) GetShared(_ context.Context, name string) (*statestore.Shared, error) {
	b, ok := m.docs[name]
	if !ok {
		return nil, statestore.ErrNotFound
	}
	return &statestore.Shared{Name: name, Body: b}, nil
}

func (m *memStore) PutShared(_ context.Context, doc *statestore.Shared) error {
	if m.conflicts > 0 {
		m.conflicts--
		return statestore.ErrConflict
	}
	m.docs[doc.Name] = doc.Body
	return nil
}

// The book keeps what runs met across runs, tries again when another run wrote in between, and
// refuses a note of no register row or reading.
func TestBookRecordsAcrossRuns(t *testing.T) {
	st := &memStore{docs: map[string][]byte{}, conflicts: 2}
	b := &Book{Store: st}
	ctx := t.Context()
	if o, err := b.Read(ctx); err != nil || len(o) != 0 {
		t.Fatalf("an empty bucket: %v %v", o, err)
	}
	if err := b.Record(ctx, Note{Row: assume.EMPatchDelivering, Reading: "refused", Detail: "400 Server is not delivered"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, Note{Row: assume.UserDataCap, Reading: "fits", Detail: "81234 bytes"}, Note{Row: assume.EMPatchDelivering, Reading: "refused"}); err != nil {
		t.Fatal(err)
	}
	o, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := o[assume.EMPatchDelivering]; s == nil || s.Counts["refused"] != 2 || s.At.IsZero() {
		t.Errorf("em-patch-delivering: %+v, want two runs that met refused", s)
	}
	if s := o[assume.UserDataCap]; s == nil || s.Last != "fits" || s.Detail != "81234 bytes" {
		t.Errorf("user-data-cap: %+v", s)
	}
	for _, bad := range []Note{{Row: "nope", Reading: "x"}, {Row: assume.UserDataCap, Reading: "maybe"}} {
		if err := b.Record(ctx, bad); err == nil || !strings.Contains(err.Error(), "register row") && !strings.Contains(err.Error(), "no reading") {
			t.Errorf("Record(%+v) = %v, want refused", bad, err)
		}
	}
	st.docs[DocName] = []byte("{not json")
	if _, err := b.Read(ctx); err == nil {
		t.Error("a corrupt document read as none")
	}
}
