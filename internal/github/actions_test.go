package github

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseOutputs reads a GITHUB_OUTPUT file the way the runner does (name<<DELIM … DELIM).
func parseOutputs(t *testing.T, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		name, delim, ok := strings.Cut(sc.Text(), "<<")
		if !ok {
			t.Fatalf("unexpected line %q", sc.Text())
		}
		var lines []string
		for sc.Scan() && sc.Text() != delim {
			lines = append(lines, sc.Text())
		}
		out[name] = strings.Join(lines, "\n")
	}
	return out
}

func TestActionsCommands(t *testing.T) {
	t.Parallel()
	var stdout, output, summary bytes.Buffer
	a := &Actions{Stdout: &stdout, Output: &output, Summary: &summary}
	end := a.Group("provision: control planes")
	a.Mask("-----BEGIN PRIVATE KEY-----\r\nMIIEv\n\n-----END PRIVATE KEY-----")
	a.Mask("50%\nsecret")
	end()
	end() // idempotent
	want := "::group::provision: control planes\n" +
		"::add-mask::-----BEGIN PRIVATE KEY-----\n::add-mask::MIIEv\n::add-mask::-----END PRIVATE KEY-----\n" +
		"::add-mask::50%25\n::add-mask::secret\n" +
		"::endgroup::\n"
	if stdout.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}

	tests := []struct{ key, value string }{
		{"cluster", "acme-web-42"},
		{"api_endpoint", "https://51.15.0.1:6443"},
		{"kubeconfig_url", "https://s3.fr-par.scw.cloud/b/k?X-Amz-Signature=abc"},
		{"note", "line one\nline two\napi_endpoint=evil"},
	}
	for _, tc := range tests {
		if err := a.SetOutput(tc.key, tc.value); err != nil {
			t.Fatal(err)
		}
	}
	got := parseOutputs(t, output.String())
	for _, tc := range tests {
		if got[tc.key] != tc.value {
			t.Errorf("output %s = %q, want %q", tc.key, got[tc.key], tc.value)
		}
	}
	if len(got) != len(tests) {
		t.Errorf("outputs %v: an injected line became an output", got)
	}
	if err := a.SetOutput("bad\nname", "x"); err == nil {
		t.Error("a name with a newline must be refused")
	}
	if err := a.AppendSummary("## pocbot\n| a | b |"); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendSummary("more"); err != nil {
		t.Fatal(err)
	}
	if summary.String() != "## pocbot\n| a | b |\nmore\n" {
		t.Fatalf("summary %q", summary.String())
	}
}

func TestNewActionsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := ActionsEnv{OutputPath: filepath.Join(dir, "out"), SummaryPath: filepath.Join(dir, "sum")}
	if err := os.WriteFile(env.SummaryPath, []byte("earlier step\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	a, closeFn, err := NewActions(env, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetOutput("cluster", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendSummary("ours"); err != nil {
		t.Fatal(err)
	}
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(env.SummaryPath)
	out, _ := os.ReadFile(env.OutputPath)
	if string(sum) != "earlier step\nours\n" || parseOutputs(t, string(out))["cluster"] != "c1" {
		t.Fatalf("summary %q output %q", sum, out)
	}
	// Outside Actions: no files, every call a no-op.
	none, closeNone, err := NewActions(ActionsEnv{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeNone()
	none.Group("x")()
	none.Mask("y")
	if none.SetOutput("a", "b") != nil || none.AppendSummary("c") != nil {
		t.Fatal("no-op Actions failed")
	}
	if _, _, err := NewActions(ActionsEnv{OutputPath: filepath.Join(dir, "missing", "out")}, nil); err == nil {
		t.Fatal("an unwritable GITHUB_OUTPUT must fail")
	}
}
