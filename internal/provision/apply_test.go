package provision

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

// Every row of the settings table with a Spec column reaches that field of the spec and no other
// (a zone its region too), and every flag of `/poc up` but the intent's own (ttl, dry-run, cold) is bound
// to the spec: a new comment flag without its binding fails here.
func TestEverySpecSettingApplies(t *testing.T) {
	samples := map[settings.Kind]any{settings.String: "nl-ams-3", settings.Bool: true, settings.Int: 5,
		settings.List: []string{"a", "b"}, settings.Duration: time.Hour}
	intents := map[string]bool{"ttl": true, "dry-run": true, "cold": true}
	for _, row := range settings.Table {
		if row.Spec == "" {
			if row.Comment != "" && !intents[row.Name] {
				t.Errorf("/poc up --%s is bound to no field of the spec: give its row a Spec", row.Comment)
			}
			continue
		}
		t.Run(row.Name, func(t *testing.T) {
			x, ok := samples[row.Kind]
			if !ok {
				t.Fatalf("no sample of kind %s", row.Kind)
			}
			v := settings.Values{}
			v.Set(row.Name, x)
			before := DefaultSpec()
			after := before
			after.Apply(v)
			got, want := fieldsOf(t, after), fieldsOf(t, before)
			want[row.Spec] = jsonValue(t, x)
			if row.Spec == "zone" {
				want["region"] = "nl-ams"
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Apply(%s=%v):\n got %v\nwant %v", row.Name, x, got, want)
			}
		})
	}
}

// A list applied is the spec's own: changing the values afterwards leaves the spec alone.
func TestApplyCopiesLists(t *testing.T) {
	v := settings.Values{}
	v.Set("extensions", []string{"siderolabs/iscsi-tools"})
	s := DefaultSpec()
	s.Apply(v)
	v["extensions"].([]string)[0] = "changed"
	if s.TalosExtensions[0] != "siderolabs/iscsi-tools" {
		t.Errorf("the spec shares the list of the values: %v", s.TalosExtensions)
	}
	empty := DefaultSpec()
	empty.Apply(nil)
	if !reflect.DeepEqual(empty, DefaultSpec()) {
		t.Errorf("no values changed the spec: %+v", empty)
	}
}

func fieldsOf(t *testing.T, s Spec) map[string]any {
	t.Helper()
	return jsonValue(t, s).(map[string]any)
}

func jsonValue(t *testing.T, x any) any {
	t.Helper()
	var v any
	b, err := json.Marshal(x)
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}
