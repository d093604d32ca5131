package settings_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pocbot/pocbot/internal/settings"
)

// The generated files are committed; they must be what the table makes today.
func TestGeneratedFilesAreFresh(t *testing.T) {
	for path, want := range map[string][]byte{settings.ExamplePath: settings.ExampleYAML(), settings.DocPath: settings.Markdown()} {
		got, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatalf("%s: %v (run `make generate`)", path, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run `make generate` and commit it", path)
		}
	}
}

func TestTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range settings.Table {
		for _, k := range []string{"name:" + s.Name, "comment:" + s.Comment, "cli:" + s.CLICommand + "/" + s.CLI, "env:" + s.Env, "repo:" + s.RepoKey} {
			if k[len(k)-1] == ':' || k[len(k)-1] == '/' {
				continue
			}
			if seen[k] {
				t.Errorf("%s is defined twice", k)
			}
			seen[k] = true
		}
		if s.Help == "" {
			t.Errorf("%s has no help", s.Name)
		}
		if s.Check != nil && s.Default != "" && s.Kind != settings.List {
			if err := s.Check(s.Default); err != nil {
				t.Errorf("%s: the default %q fails its own check: %v", s.Name, s.Default, err)
			}
		}
	}
}

func TestTalosVersion(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{{"v1.13.11", "v1.13.11"}, {"1.13.11", "v1.13.11"}, {"v1.14.0-rc.1", "v1.14.0-rc.1"}, {"v1.14.0-alpha.2", "v1.14.0-alpha.2"},
		{"v1.13", ""}, {"v1.14.0-foo.1", ""}, {"v01.13.1", ""}, {"vv1.13.1", ""}, {"", ""}} {
		got, err := settings.NormalizeTalosVersion(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("NormalizeTalosVersion(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if err := settings.CheckTalosVersion("1.13.11"); err == nil {
		t.Error("CheckTalosVersion accepts a version without its v")
	}
}

func TestExtension(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"siderolabs/iscsi-tools", true}, {"gvisor", true}, {"a/b/c", false}, {"A/b", false}, {"a//b", false}, {"/a", false}, {"", false}} {
		if err := settings.CheckExtension(tc.in); (err == nil) != tc.ok {
			t.Errorf("CheckExtension(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}
