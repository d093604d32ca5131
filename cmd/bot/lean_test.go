package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
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

// releaseDeps lists the packages the release build links (`go list -deps` of this command with the
// build tags .goreleaser.yaml's build passes), so that what the tests below look at is what ships.
func releaseDeps(t *testing.T) []string {
	t.Helper()
	args, _ := releaseBuild(t, os.DevNull)
	list := []string{"list", "-deps"}
	for _, a := range args {
		if strings.HasPrefix(a, "-tags=") {
			list = append(list, a)
		}
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(runtime.GOROOT(), "bin", "go"), append(list, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(list, " "), err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestReleaseLinksOneGoGithub: the release links one major version of go-github, the one
// ghinstallation (which signs the App's JWT) is built on. pocbot's own calls used v66 while
// ghinstallation v2.19 uses v88: two copies of the client (0.14 MB of the release binary).
func TestReleaseLinksOneGoGithub(t *testing.T) {
	var majors []string
	for _, p := range releaseDeps(t) {
		if rest, ok := strings.CutPrefix(p, "github.com/google/go-github/"); ok && strings.HasSuffix(rest, "/github") {
			majors = append(majors, strings.TrimSuffix(rest, "/github"))
		}
	}
	if len(majors) != 1 {
		t.Errorf("the release build links go-github %v: want exactly one major version, ghinstallation's (see go.mod); move pocbot's imports to it", majors)
	}
}

// TestReleaseLinksNoTalosClientPackage: the release talks to Talos through machinery's generated
// service clients and COSI's state client (provision/talos nodeAPI), not machinery's client
// package, which always links Omni's and SideroV1's request signing (gopenpgp, go-crypto, circl)
// for talosconfigs the bot never writes: 1.55 MB of the release binary (32.18 -> 30.63 MB,
// linux/amd64, measured with the build below).
func TestReleaseLinksNoTalosClientPackage(t *testing.T) {
	for _, p := range releaseDeps(t) {
		switch {
		case p == "github.com/siderolabs/talos/pkg/machinery/client",
			strings.HasPrefix(p, "github.com/ProtonMail/gopenpgp/"),
			strings.HasPrefix(p, "github.com/siderolabs/go-api-signature/"):
			t.Errorf("the release build links %s: call the node through provision/talos's nodeAPI, not machinery's client package", p)
		}
	}
}

// releaseBuild is the `go build` command line and environment of .goreleaser.yaml's build (its
// flags, its ldflags without the templated -X stamps, its env), so that what this file and
// BenchmarkReleaseBinary measure is what the release ships. extraLdflags are appended.
func releaseBuild(tb testing.TB, out string, extraLdflags ...string) (args, env []string) {
	tb.Helper()
	b, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		tb.Fatalf("read the release build: %v", err)
	}
	var cfg struct {
		Builds []struct {
			Main    string   `yaml:"main"`
			Env     []string `yaml:"env"`
			Flags   []string `yaml:"flags"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		tb.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(cfg.Builds) != 1 || cfg.Builds[0].Main != "./cmd/bot" {
		tb.Fatalf(".goreleaser.yaml: want exactly one build, of ./cmd/bot; got %+v", cfg.Builds)
	}
	build := cfg.Builds[0]
	var ld []string
	for _, f := range build.Ldflags {
		if !strings.Contains(f, "{{") {
			ld = append(ld, f)
		}
	}
	ld = append(ld, extraLdflags...)
	args = append([]string{"build"}, build.Flags...)
	args = append(args, "-ldflags", strings.Join(ld, " "), "-o", out, ".")
	return args, append(os.Environ(), build.Env...)
}

// TestReleaseBinaryKeepsDeadMethodElimination: no function reachable in the release build calls a
// method by a name known only at run time (reflect's MethodByName, as text/template and
// html/template do for {{.Field}}). One such call makes the linker keep every exported method of
// every type the binary holds: the release binary was 52 MB with it and 37 MB without. The two that
// were there: appsetup's html/template page, and gRPC's golang.org/x/net/trace, whose init serves
// /debug/requests through html/template (.goreleaser.yaml builds with -tags=grpcnotrace, gRPC's own
// switch for that: google.golang.org/grpc@v1.84.0/trace_notrace.go). It also fails when the release
// reaches a function listed below as too heavy for what pocbot would use it for.
func TestReleaseBinaryKeepsDeadMethodElimination(t *testing.T) {
	t.Parallel()
	// The tests' own bot is the release build: once it is built (and its packages compiled into
	// the build cache), this build only links.
	buildBot(t)
	args, env := releaseBuild(t, filepath.Join(t.TempDir(), "bot"), "-dumpdep")
	cmd := exec.CommandContext(t.Context(), filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%.2000s", strings.Join(args, " "), err, stderr.String())
	}
	// -dumpdep prints one "from -> to" line per edge the linker's dead-code pass follows, and marks
	// a function that calls methods by name "<ReflectMethod>".
	const mark = " <ReflectMethod>"
	graph := stderr.String()
	callers := map[string]string{}
	var flagged []string
	sc := bufio.NewScanner(strings.NewReader(graph))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		to = strings.TrimSuffix(to, mark)
		if strings.HasSuffix(from, mark) {
			from = strings.TrimSuffix(from, mark)
			if !slices.Contains(flagged, from) {
				flagged = append(flagged, from)
			}
		}
		if _, seen := callers[to]; !seen {
			callers[to] = from
		}
	}
	if callers["main.main"] == "" {
		t.Fatalf("the linker printed no dependency graph reaching main.main (-dumpdep): the check cannot see anything:\n%.2000s", graph)
	}
	// Functions the release must not reach, each with why.
	for f, why := range map[string]string{
		"github.com/aws/aws-sdk-go-v2/config.LoadDefaultConfig": "gocloud's s3 URL opener (blob.OpenBucket with an s3:// or any URL) loads the AWS SDK's whole default configuration (shared files, SSO, STS, IMDS): 1.5 MB pocbot never uses; open s3:// with an explicit client (wiring.OpenS3, statestore's openS3URL) and file:// with fileblob's own opener",
	} {
		if _, reached := callers[f]; reached {
			chain := []string{}
			for x := callers[f]; x != "" && len(chain) < 40; x = callers[x] {
				chain = append(chain, x)
			}
			t.Errorf("the release build reaches %s: %s; reached through:\n  %s", f, why, strings.Join(chain, "\n  "))
		}
	}
	for _, f := range flagged {
		chain := []string{f}
		for x := callers[f]; x != "" && len(chain) < 40; x = callers[x] {
			chain = append(chain, x)
		}
		t.Errorf("the release build reaches %s, which calls methods by name, so every exported method of every type stays linked; reached through:\n  %s", f, strings.Join(chain[1:], "\n  "))
	}
}
