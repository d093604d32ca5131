package clusterops

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pocbot/pocbot/internal/statestore"
)

// Meta is a cluster's public metadata beyond the header's own fields. It travels in the header's
// labels, which statestore keeps opaque (and authenticates, see its List); MetaOf and Meta.Into
// are the one codec between the two, so that no other code parses or formats a label.
type Meta struct {
	Kubeconfig     string    // where the encrypted kubeconfig object is (for messages; not a URL)
	DailyCostNanos int64     // the daily cost in nano-euros; 0: not recorded
	WarnedFor      time.Time // the expiry the one expiry warning was posted for; zero: none
	StickyID       int64     // the status comment's id; 0: unknown
	Keep           bool      // the keep label was seen on the issue (as last seen by the reaper)
	DownFailed     time.Time // when the last teardown failed; zero: it did not
	RequesterID    int64     // the immutable account id of the user who created the cluster; 0: unknown
	// PausedTTLLeft is the running lifetime a paused cluster had left when it was paused: its
	// expiry while paused is max_paused from the pause, and a resume gives this back.
	PausedTTLLeft time.Duration
	// AwakeUntil: a command resumed the cluster inside a pause window; the schedule leaves it
	// running until then (the window's end).
	AwakeUntil time.Time
}

// The header labels Meta owns; their spelling is the wire format.
const (
	labelKubeconfig = "kubeconfig"
	labelDailyCost  = "daily_cost_nanos"
	labelWarned     = "warned"
	labelStickyID   = "sticky_id"
	labelKeep       = "keep"
	labelDownFailed = "down_failed"
	labelRequester  = "requested_by_id"
	labelTTLLeft    = "paused_ttl_left_s"
	labelAwake      = "awake_until"
)

// MetaOf decodes a header's labels. A label that is present but malformed is an error naming it
// (the fields decoded so far are returned with it): a caller deciding on Meta treats the error as
// "not known", never as a value.
func MetaOf(h statestore.Header) (Meta, error) {
	var m Meta
	bad := func(label string, err error) (Meta, error) {
		return m, fmt.Errorf("header of cluster %q: label %s=%q: %w", h.Cluster, label, h.Labels[label], err)
	}
	m.Kubeconfig = h.Labels[labelKubeconfig]
	if v, ok := h.Labels[labelDailyCost]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return bad(labelDailyCost, fmt.Errorf("not a number of nano-euros (%v)", err))
		}
		m.DailyCostNanos = n
	}
	for _, f := range []struct {
		label string
		into  *time.Time
	}{{labelWarned, &m.WarnedFor}, {labelDownFailed, &m.DownFailed}, {labelAwake, &m.AwakeUntil}} {
		if v, ok := h.Labels[f.label]; ok {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return bad(f.label, err)
			}
			*f.into = t.UTC()
		}
	}
	if v, ok := h.Labels[labelStickyID]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return bad(labelStickyID, fmt.Errorf("not a comment id (%v)", err))
		}
		m.StickyID = n
	}
	if v, ok := h.Labels[labelRequester]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return bad(labelRequester, fmt.Errorf("not an account id (%v)", err))
		}
		m.RequesterID = n
	}
	if v, ok := h.Labels[labelTTLLeft]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return bad(labelTTLLeft, fmt.Errorf("not a number of seconds (%v)", err))
		}
		m.PausedTTLLeft = time.Duration(n) * time.Second
	}
	if v, ok := h.Labels[labelKeep]; ok {
		k, err := strconv.ParseBool(v)
		if err != nil {
			return bad(labelKeep, err)
		}
		m.Keep = k
	}
	return m, nil
}

// Into writes m into h's labels: the labels Meta owns are set, or removed for zero values; other
// labels are left as they are.
func (m Meta) Into(h *statestore.Header) {
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	set := func(label, v string) {
		if v == "" {
			delete(h.Labels, label)
		} else {
			h.Labels[label] = v
		}
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	set(labelKubeconfig, m.Kubeconfig)
	set(labelDailyCost, num(m.DailyCostNanos))
	set(labelWarned, stamp(m.WarnedFor))
	set(labelStickyID, num(m.StickyID))
	set(labelDownFailed, stamp(m.DownFailed))
	set(labelRequester, num(m.RequesterID))
	set(labelTTLLeft, num(int64(m.PausedTTLLeft/time.Second)))
	set(labelAwake, stamp(m.AwakeUntil))
	if m.Keep {
		set(labelKeep, "true")
	} else {
		set(labelKeep, "")
	}
	if len(h.Labels) == 0 {
		h.Labels = nil
	}
}

// EditMeta decodes h's Meta, lets edit change it, and writes it back (for Ops.Update callers). A
// malformed label is an error: nothing is changed.
func EditMeta(h *statestore.Header, edit func(*Meta) error) error {
	m, err := MetaOf(*h)
	if err != nil {
		return err
	}
	if err := edit(&m); err != nil {
		return err
	}
	m.Into(h)
	return nil
}
