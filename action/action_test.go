// Package action_test checks the composite Action (action.yml at the repository root) and its
// download-verify script: actionlint knows only workflows, so the Action's steps are linted inside
// a generated workflow whose workflow_call inputs are the Action's inputs (shellcheck included when
// installed). The script's behaviour on a good and a tampered release is tested in cmd/bot, next
// to the emulated world it runs against.
package action_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/testenv"
)

type actionFile struct {
	Inputs  yaml.MapSlice `yaml:"inputs"`
	Outputs yaml.MapSlice `yaml:"outputs"`
	Runs    struct {
		Using string          `yaml:"using"`
		Steps []yaml.MapSlice `yaml:"steps"`
	} `yaml:"runs"`
}

func load(t *testing.T) actionFile {
	t.Helper()
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

func TestActionLint(t *testing.T) {
	bin := testenv.Program(t, "actionlint", "go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12")
	a := load(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	inputs := yaml.MapSlice{}
	for _, in := range a.Inputs {
		inputs = append(inputs, yaml.MapItem{Key: in.Key, Value: yaml.MapSlice{{Key: "type", Value: "string"}, {Key: "required", Value: false}}})
	}
	wf := yaml.MapSlice{
		{Key: "name", Value: "action.yml as a workflow"},
		{Key: "on", Value: yaml.MapSlice{{Key: "workflow_call", Value: yaml.MapSlice{{Key: "inputs", Value: inputs}}}}},
		{Key: "permissions", Value: yaml.MapSlice{}},
		{Key: "jobs", Value: yaml.MapSlice{{Key: "action", Value: yaml.MapSlice{
			{Key: "runs-on", Value: "ubuntu-latest"},
			{Key: "steps", Value: a.Runs.Steps},
		}}}},
	}
	out, err := yaml.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "action-as-workflow.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-no-color", path)
	if res, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint on action.yml's steps: %v\n%s\n--- generated workflow ---\n%s", err, res, out)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if res, err := exec.Command(sc, "fetch-bot.sh").CombinedOutput(); err != nil {
			t.Errorf("shellcheck fetch-bot.sh: %v\n%s", err, res)
		}
	}
}

// Every environment variable the run step sets is a setting of the table (or the Action's own
// plumbing), and every input is used: an input added without its env line, or a variable renamed
// in the table only, fails here.
func TestActionInputsAreSettings(t *testing.T) {
	a := load(t)
	var run yaml.MapSlice
	for _, st := range a.Runs.Steps {
		for _, kv := range st {
			if kv.Key == "id" && kv.Value == "run" {
				run = st
			}
		}
	}
	if run == nil {
		t.Fatal("no step with id run")
	}
	var env yaml.MapSlice
	for _, kv := range run {
		if kv.Key == "env" {
			env = kv.Value.(yaml.MapSlice)
		}
	}
	used := map[string]bool{}
	ref := regexp.MustCompile(`inputs\.([a-z-]+)`)
	plumbing := []string{"BOT", "INPUT_COMMAND", "INPUT_CLUSTER", "INPUT_GITHUB_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
	for _, kv := range env {
		name := kv.Key.(string)
		if m := ref.FindStringSubmatch(kv.Value.(string)); m != nil {
			used[m[1]] = true
		}
		if slices.Contains(plumbing, name) {
			continue
		}
		if _, ok := settings.ByEnv(name); !ok {
			t.Errorf("the Action sets %s, which the settings table does not define", name)
		}
	}
	for _, in := range a.Inputs {
		name := in.Key.(string)
		if !used[name] && !slices.Contains([]string{"version", "release-url"}, name) {
			t.Errorf("input %s is not passed to the bot", name)
		}
	}
	for _, want := range []string{"cluster", "api-endpoint", "kubeconfig-url", "kubeconfig-path"} {
		found := false
		for _, o := range a.Outputs {
			found = found || o.Key == want
		}
		if !found {
			t.Errorf("output %s is missing", want)
		}
	}
	if !strings.Contains(mustRead(t, "../action.yml"), "fetch-bot.sh") {
		t.Error("action.yml does not run fetch-bot.sh")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every third-party action is pinned by a full commit SHA with its version as a comment (issue 11,
// hole 9): a moved tag cannot change what runs with the repository's secrets.
func TestActionsArePinnedBySHA(t *testing.T) {
	files, _ := filepath.Glob("../.github/workflows/*.yml")
	more, _ := filepath.Glob("../deploy/workflow/*.yml")
	files = append(append(files, more...), "../action.yml")
	uses := regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*(\S+)(.*)$`)
	pinned := regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	version := regexp.MustCompile(`^\s*#\s*v\d+(\.\d+)*`)
	n := 0
	for _, f := range files {
		for _, m := range uses.FindAllStringSubmatch(mustRead(t, f), -1) {
			ref, rest := m[1], m[2]
			if strings.HasPrefix(ref, "./") {
				continue
			}
			n++
			if !pinned.MatchString(ref) || !version.MatchString(rest) {
				t.Errorf("%s: uses %s%s: pin it by commit SHA with the version as a comment (uses: owner/repo@<sha> # vX.Y.Z)", f, ref, rest)
			}
		}
	}
	if n == 0 {
		t.Fatal("no uses: found")
	}
}

// The shipped workflows take their secrets from an environment (limited to the default branch).
func TestWorkflowsUseAnEnvironment(t *testing.T) {
	for _, f := range []string{"../.github/workflows/poc.yml", "../deploy/workflow/poc.yml"} {
		if !regexp.MustCompile(`(?m)^\s+environment:\s*poc\s*$`).MatchString(mustRead(t, f)) {
			t.Errorf("%s: the job does not run in the poc environment", f)
		}
	}
}

// The pinned commit pins the binary (issue 22): the release comes from the Action's own
// action/version, every archive is verified against action/checksums.txt of the same commit, the
// cache holds only the archive (never a checksums file), and the release workflow commits the sums
// into the Action before tagging. The script's behaviour is tested in cmd/bot/action_test.go.
func TestActionPinsItsBinary(t *testing.T) {
	a := mustRead(t, "../action.yml")
	for _, want := range []string{
		`"$GITHUB_ACTION_PATH/action/version"`,
		"POCBOT_CHECKSUMS: ${{ github.action_path }}/action/checksums.txt",
		"POCBOT_VERSION: ${{ steps.pin.outputs.version }}",
		"path: ${{ runner.temp }}/pocbot-${{ steps.pin.outputs.version }}/*.tar.zst",
	} {
		if !strings.Contains(a, want) {
			t.Errorf("action.yml lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^  version:\n(?:    .*\n)*?    required: true`).MatchString(a) {
		t.Error("action.yml requires a version input: the pinned commit decides the release")
	}
	if strings.Contains(mustRead(t, "fetch-bot.sh"), "/checksums.txt\" checksums.txt") {
		t.Error("fetch-bot.sh downloads checksums.txt: only the Action's pinned sums may count")
	}
	rel := mustRead(t, "../.github/workflows/release.yml")
	for _, want := range []string{"cp dist/checksums.txt action/checksums.txt", ">action/version", "attest-build-provenance", "subject-checksums: dist/checksums.txt"} {
		if !strings.Contains(rel, want) {
			t.Errorf("release.yml lacks %q", want)
		}
	}
	for _, f := range []string{"version", "checksums.txt"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("action/%s: %v (the release workflow fills it; it must exist)", f, err)
		}
	}
	if wf := mustRead(t, "../deploy/workflow/poc.yml"); regexp.MustCompile(`(?m)^\s+version:\s*v`).MatchString(wf) {
		t.Error("deploy/workflow/poc.yml gives version: a Dependabot bump of the SHA would leave it behind")
	}
}

// The README's inputs and outputs tables name every input and output of action.yml.
func TestReadmeListsInputsAndOutputs(t *testing.T) {
	a := load(t)
	readme := mustRead(t, "../README.md")
	for _, kv := range append(append(yaml.MapSlice{}, a.Inputs...), a.Outputs...) {
		if !strings.Contains(readme, "`"+kv.Key.(string)+"`") {
			t.Errorf("README.md does not list the Action's %s", kv.Key)
		}
	}
}

// The archive format is one fact, written in four places that must change together (issue 22: the
// format decides download-verify-start): .goreleaser.yaml's archives, the name fetch-bot.sh
// downloads and unpacks, the Action's cache path and the release workflow's upload.
func TestActionArchiveFormatAgrees(t *testing.T) {
	var cfg struct {
		Archives []struct {
			Formats      []string `yaml:"formats"`
			NameTemplate string   `yaml:"name_template"`
		} `yaml:"archives"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, "../.goreleaser.yaml")), &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(cfg.Archives) != 1 || len(cfg.Archives[0].Formats) != 1 {
		t.Fatalf(".goreleaser.yaml: want one archive in one format, got %+v", cfg.Archives)
	}
	ext := "." + cfg.Archives[0].Formats[0]
	if got, want := cfg.Archives[0].NameTemplate, "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}"; got != want {
		t.Errorf(".goreleaser.yaml: archives' name_template %q, fetch-bot.sh builds %q", got, want)
	}
	for _, c := range []struct{ file, want string }{
		{"fetch-bot.sh", `archive="pocbot_${version#v}_${os}_${arch}` + ext + `"`},
		{"../action.yml", "/*" + ext + "\n"},
		{"../.github/workflows/release.yml", " dist/*" + ext + " dist/checksums.txt"},
	} {
		if !strings.Contains(mustRead(t, c.file), c.want) {
			t.Errorf("%s lacks %q: .goreleaser.yaml's archives are %s", c.file, c.want, ext)
		}
	}
	if ext == ".tar.zst" && !strings.Contains(mustRead(t, "fetch-bot.sh"), `zstd -dcq "$archive" | tar -xf - bot`) {
		t.Error("fetch-bot.sh does not unpack the tar.zst with zstd -dcq | tar")
	}
}
