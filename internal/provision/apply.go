package provision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/settings"
)

// Apply writes into s the settings of v that are fields of a cluster's spec: each row of the
// settings table with a Spec column names the field (by its JSON name) its value goes to, so a
// comment's `--talos`, `bot up --talos` and POC_TALOS_VERSION reach TalosVersion through this one
// binding. Settings v does not hold keep s's values; the others of v (ttl, dry-run) are the
// intent's. A zone sets its region too. A row whose Spec names no field of Spec, or of another
// type than its Kind's, is a programming error and panics (TestEverySpecSettingApplies).
func (s *Spec) Apply(v settings.Values) {
	fields := map[string]any{}
	for name, x := range v {
		if row := settings.Lookup(name); row.Spec != "" {
			fields[row.Spec] = x
		}
	}
	if len(fields) == 0 {
		return
	}
	// JSON, because the table names fields by their JSON names and a decode over a value sets the
	// fields present only (a list is replaced, never shared with v).
	b, err := json.Marshal(fields)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(s)
	}
	if err != nil {
		panic(fmt.Sprintf("provision: the settings %v do not apply to a Spec: %v", v.Names(), err))
	}
	if _, ok := fields["zone"]; ok {
		if i := strings.LastIndex(s.Zone, "-"); i > 0 {
			s.Region = s.Zone[:i]
		}
	}
}
