package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// thirdPartyTesting lists the packages outside pocbot allowed to import "testing" into the
// production binary, each with why it cannot be avoided. go-cni's testutils.go (a non-test file)
// imports it, and Talos machinery's constants import go-cni: dropping it means dropping machinery.
var thirdPartyTesting = map[string]bool{
	"github.com/containerd/go-cni": true,
}

// linkedOffenders lists, for the build of this command with the given tags, every stand-in package
// linked in and every package that brings "testing" in (other than the allow-listed ones).
func linkedOffenders(t *testing.T, tags string) []string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	args := []string{"list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \",\"}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	out, err := exec.CommandContext(t.Context(), gobin, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, " ")
		if strings.HasPrefix(path, "github.com/pocbot/pocbot/internal/sim") {
			bad = append(bad, path+" (a stand-in)")
		}
		for _, imp := range strings.Split(imports, ",") {
			if imp == "testing" && !thirdPartyTesting[path] {
				bad = append(bad, path+" imports testing")
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// TestProductionBinaryLinksNoStandIn: the binary the Action runs (cmd/bot without the sim tag)
// links no internal/sim package and nothing of pocbot's that imports "testing"; the sim build
// does, which shows the check sees them.
func TestProductionBinaryLinksNoStandIn(t *testing.T) {
	if bad := linkedOffenders(t, ""); len(bad) > 0 {
		t.Errorf("the production build of cmd/bot links what only the sim build may:\n  %s\nmove the import behind //go:build sim (see nosim.go)", strings.Join(bad, "\n  "))
	}
	if bad := linkedOffenders(t, "sim"); len(bad) == 0 {
		t.Error("the sim build links no stand-in: the check above cannot see them")
	}
}
