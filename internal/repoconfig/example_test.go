package repoconfig_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/repoconfig"
)

// The documented example states the defaults: parsed, it must be exactly Default().
func TestExampleFileIsTheDefaults(t *testing.T) {
	b, err := os.ReadFile("../../deploy/poc.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := repoconfig.Parse(b)
	if err != nil {
		t.Fatalf("deploy/poc.example.yml: %v", err)
	}
	if want := repoconfig.Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/poc.example.yml states other defaults than the code:\n got %+v\nwant %+v", got, want)
	}
}

// Every key of the settings table is one the file's YAML shape decodes, and no other: a key added to
// the table without a field (or the reverse) fails here.
func TestKeysMatchTheSettingsTable(t *testing.T) {
	for _, k := range repoconfig.Keys() {
		if _, err := repoconfig.Parse([]byte(k + ": ~\n")); err != nil && strings.Contains(err.Error(), "not found in type") {
			t.Errorf("key %s of the settings table has no field: %v", k, err)
		}
	}
	if _, err := repoconfig.Parse([]byte("nope: 1\n")); err == nil {
		t.Error("an unknown key was accepted")
	}
}
