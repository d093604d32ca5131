// Package firstcontact keeps the first-contact observations: the readings of the assumptions
// register's rows (internal/assume) that no probe of `bot doctor --live` can settle within its
// run and budget, as the bot's own runs meet them on the real account. An up notes whether a
// PATCH of its delivering Elastic Metal order was refused (em-patch-delivering) and how large a
// user data Scaleway took (user-data-cap); a comment's run notes how long GitHub took to start it
// (job-start). They are kept in one shared document of the state bucket, which the doctor reads
// and reports (unknown, and what settles it, until a run met the row).
//
// The package owns the document and the pure mapping of a measured job start to its reading; it
// knows nothing of Scaleway or GitHub.
package firstcontact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/statestore"
)

// DocName is the shared document of the state bucket that keeps the observations.
const DocName = "first-contact"

// Keep is how many measured samples a row keeps.
const Keep = 10

// Note is one observation of a run: the row, the reading met, what was seen; Sample is the
// measurement of a measured row (job-start), zero otherwise.
type Note struct {
	Row     string        `json:"row"`
	Reading string        `json:"reading"`
	Detail  string        `json:"detail"`
	Sample  time.Duration `json:"sample,omitempty"`
}

// Seen is what the runs met of one row.
type Seen struct {
	Counts  map[string]int  `json:"counts"` // runs that met each reading
	Last    string          `json:"last"`   // the reading the last run met
	Detail  string          `json:"detail"` // what it saw
	At      time.Time       `json:"at"`
	Samples []time.Duration `json:"samples,omitempty"` // the last Keep measurements, oldest first
}

// Observations are the rows the runs met, by row id.
type Observations map[string]*Seen

// Add records n as met at at.
func (o Observations) Add(n Note, at time.Time) {
	s := o[n.Row]
	if s == nil {
		s = &Seen{Counts: map[string]int{}}
		o[n.Row] = s
	}
	s.Counts[n.Reading]++
	s.Last, s.Detail, s.At = n.Reading, n.Detail, at
	if n.Sample > 0 {
		s.Samples = append(s.Samples, n.Sample)
		if k := len(s.Samples); k > Keep {
			s.Samples = slices.Clone(s.Samples[k-Keep:])
		}
	}
}

// Median is the median of the samples (0 without any).
func (s *Seen) Median() time.Duration {
	if s == nil || len(s.Samples) == 0 {
		return 0
	}
	x := slices.Clone(s.Samples)
	slices.Sort(x)
	return x[len(x)/2]
}

// Reading is the reading the row stands at: for a measured row, the reading of the median; else
// a reading the bot does not handle when any run met one (one refusal is enough to fail), else
// the last one met.
func (s *Seen) Reading(row assume.Row) string {
	if s == nil {
		return ""
	}
	if row.ID == assume.JobStart && len(s.Samples) > 0 {
		return JobStartReading(s.Median())
	}
	for _, x := range row.Readings {
		if !x.Handled && s.Counts[x.Value] > 0 {
			return x.Value
		}
	}
	return s.Last
}

// Job start bounds of register row job-start: docs/pool.md's 30 s, and the two minutes past
// which a queue is more than the hosted runners' reported P90.
const (
	JobStartQuick  = 30 * time.Second
	JobStartQueued = 2 * time.Minute
)

// JobStartReading maps a comment → job start delay to its reading of row job-start.
func JobStartReading(d time.Duration) string {
	switch {
	case d <= JobStartQuick:
		return "quick"
	case d <= JobStartQueued:
		return "queued"
	}
	return "slow"
}

// JobStart is the note of a run that started at started for an event created at created (a
// comment's created_at); ok is false when either is unknown or the clocks disagree (started
// before created: a runner's clock behind GitHub's tells nothing).
func JobStart(created, started time.Time) (Note, bool) {
	if created.IsZero() || started.IsZero() || started.Before(created) {
		return Note{}, false
	}
	d := started.Sub(created)
	return Note{Row: assume.JobStart, Reading: JobStartReading(d), Sample: d,
		Detail: fmt.Sprintf("the job started %s after the comment", d.Round(time.Second))}, true
}

// Book reads and records the observations.
type Book struct {
	Store statestore.SharedDocs
	Now   func() time.Time // default time.Now
}

// Read is every observation so far (empty when no run recorded one).
func (b *Book) Read(ctx context.Context) (Observations, error) {
	sh, err := b.Store.GetShared(ctx, DocName)
	if errors.Is(err, statestore.ErrNotFound) {
		return Observations{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the first-contact observations: %w", err)
	}
	return decode(sh.Body)
}

// decode reads the document's body (nil: never written).
func decode(body []byte) (Observations, error) {
	o := Observations{}
	if body == nil {
		return o, nil
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, fmt.Errorf("the first-contact observations (shared/%s) do not decode: %w", DocName, err)
	}
	return o, nil
}

// Record adds notes (a conditional write, again on a conflict). Notes of rows the register does
// not hold are a programming error, refused.
func (b *Book) Record(ctx context.Context, notes ...Note) error {
	if len(notes) == 0 {
		return nil
	}
	for _, n := range notes {
		row, ok := assume.Lookup(n.Row)
		if !ok {
			return fmt.Errorf("record a first-contact observation: no register row %q", n.Row)
		}
		if _, ok := row.Reading(n.Reading); !ok {
			return fmt.Errorf("record a first-contact observation: %s has no reading %q", n.Row, n.Reading)
		}
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	err := statestore.UpdateShared(ctx, b.Store, DocName, func(body []byte) ([]byte, error) {
		o, err := decode(body)
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			o.Add(n, now().UTC())
		}
		return json.Marshal(o)
	})
	if err != nil {
		return fmt.Errorf("record the first-contact observations: %w", err)
	}
	return nil
}
