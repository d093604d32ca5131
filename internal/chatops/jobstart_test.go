package chatops_test

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/firstcontact"
)

// Register row job-start, under each reading: a comment's run measures how long GitHub took to
// start it (the comment's created_at to the bot's start) and keeps it in the state bucket once
// the reply is out; the doctor reports the median's reading. A run whose clock is behind the
// comment's records nothing. Light harness: no world.
func TestCommentRunRecordsItsJobStart(t *testing.T) {
	t.Parallel()
	h, ctx := scene{repo: "acme/shop", users: []string{"alice:write"}, issues: []int{1}, light: true}.open(t)
	book := &firstcontact.Book{Store: h.fake.Store}
	h.backend.Ops.FirstContact = book
	row := assume.MustLookup(assume.JobStart)
	for _, c := range []struct {
		after time.Duration
		want  string // the row's reading once the sample is in (the median of all so far)
	}{{12 * time.Second, "quick"}, {50 * time.Second, "queued"}, {5 * time.Minute, "queued"}, {4 * time.Minute, "slow"}, {-3 * time.Second, "slow"}} {
		ev := h.comment("acme/shop", 1, false, "alice", "/poc cost")
		hd := h.handler("acme/shop")
		hd.Started = ev.Created.Add(c.after)
		if _, err := hd.Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
		o, err := book.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := o[assume.JobStart].Reading(row); got != c.want {
			t.Errorf("after a job started %s after its comment: job-start stands at %q (samples %v), want %q", c.after, got, o[assume.JobStart].Samples, c.want)
		}
	}
	if o, _ := book.Read(ctx); len(o[assume.JobStart].Samples) != 4 {
		t.Errorf("samples %v: want the four runs whose clocks agree", o[assume.JobStart].Samples)
	}
}
