package clusterops

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/statestore"
)

func TestMetaCodec(t *testing.T) {
	at := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	full := Meta{Kubeconfig: "s3://b/artifacts/c/kubeconfig", DailyCostNanos: 4_200_000_000, WarnedFor: at, StickyID: 77, Keep: true, DownFailed: at.Add(time.Hour), RequesterID: 4242}
	t.Run("round trip keeps foreign labels", func(t *testing.T) {
		for _, m := range []Meta{{}, full} {
			h := statestore.Header{Cluster: "c", Labels: map[string]string{"other": "x"}}
			m.Into(&h)
			got, err := MetaOf(h)
			if err != nil || got != m {
				t.Fatalf("MetaOf(Into(%+v)) = %+v, %v", m, got, err)
			}
			if h.Labels["other"] != "x" {
				t.Fatalf("Into dropped a foreign label: %v", h.Labels)
			}
		}
	})
	t.Run("zero values leave no label", func(t *testing.T) {
		h := statestore.Header{Cluster: "c"}
		full.Into(&h)
		Meta{}.Into(&h)
		if len(h.Labels) != 0 {
			t.Fatalf("labels left: %v", h.Labels)
		}
	})
	for _, tc := range []struct{ label, value string }{
		{labelDailyCost, "1e9"}, {labelDailyCost, "-5"}, {labelWarned, "yesterday"}, {labelStickyID, "0"},
		{labelStickyID, "abc"}, {labelKeep, "maybe"}, {labelRequester, "alice"}, {labelDownFailed, "2026-13-01T00:00:00Z"},
	} {
		t.Run("malformed "+tc.label+"="+tc.value, func(t *testing.T) {
			_, err := MetaOf(statestore.Header{Cluster: "c", Labels: map[string]string{tc.label: tc.value}})
			if err == nil || !strings.Contains(err.Error(), tc.label) || !strings.Contains(err.Error(), `cluster "c"`) {
				t.Fatalf("MetaOf: %v; want an error naming %s and the cluster", err, tc.label)
			}
			h := statestore.Header{Cluster: "c", Labels: map[string]string{tc.label: tc.value}}
			if err := EditMeta(&h, func(*Meta) error { return nil }); err == nil || h.Labels[tc.label] != tc.value {
				t.Fatalf("EditMeta on a malformed header: %v, labels %v; want an error and nothing changed", err, h.Labels)
			}
		})
	}
}
