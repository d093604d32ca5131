package github

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Actions writes GitHub Actions workflow commands and files. Its writers are injectable: Stdout
// receives the workflow commands, Output and Summary are the $GITHUB_OUTPUT and
// $GITHUB_STEP_SUMMARY files (nil: those features are no-ops, as outside Actions).
type Actions struct {
	mu      sync.Mutex
	Stdout  io.Writer
	Output  io.Writer
	Summary io.Writer
}

// NewActions opens $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY for appending when they are set. The
// returned close function closes them.
func NewActions(env ActionsEnv, stdout io.Writer) (*Actions, func() error, error) {
	a := &Actions{Stdout: stdout}
	var files []*os.File
	closeAll := func() error {
		var first error
		for _, f := range files {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	open := func(name, path string) (io.Writer, error) {
		if path == "" {
			return nil, nil
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("github: open %s: %w", name, err)
		}
		files = append(files, f)
		return f, nil
	}
	var err error
	if a.Output, err = open("GITHUB_OUTPUT", env.OutputPath); err != nil {
		closeAll()
		return nil, nil, err
	}
	if a.Summary, err = open("GITHUB_STEP_SUMMARY", env.SummaryPath); err != nil {
		closeAll()
		return nil, nil, err
	}
	return a, closeAll, nil
}

// escapeData escapes a workflow command's data the way the Actions runner unescapes it.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func (a *Actions) printf(format string, args ...any) {
	if a == nil || a.Stdout == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.Stdout, format, args...)
}

// Group opens a collapsible log group; call the returned function to close it.
func (a *Actions) Group(name string) func() {
	a.printf("::group::%s\n", escapeData(name))
	var once sync.Once
	return func() { once.Do(func() { a.printf("::endgroup::\n") }) }
}

// Mask hides value in the job's logs from now on. The runner masks line by line, so a
// multi-line secret (a PEM key, a kubeconfig) is registered one line at a time.
func (a *Actions) Mask(value string) {
	for _, line := range strings.Split(strings.ReplaceAll(value, "\r\n", "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			a.printf("::add-mask::%s\n", escapeData(line))
		}
	}
}

// SetOutput appends a step output. Every value uses the heredoc form with a random delimiter,
// so multi-line values work and a value cannot inject another output.
func (a *Actions) SetOutput(key, value string) error {
	if a == nil || a.Output == nil {
		return nil
	}
	if key == "" || strings.ContainsAny(key, "\r\n=<") {
		return fmt.Errorf("github: step output name %q is not valid", key)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("github: random delimiter for output %s: %w", key, err)
	}
	delim := "ghadelimiter_" + hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := fmt.Fprintf(a.Output, "%s<<%s\n%s\n%s\n", key, delim, value, delim); err != nil {
		return fmt.Errorf("github: write step output %s to GITHUB_OUTPUT: %w", key, err)
	}
	return nil
}

// AppendSummary appends markdown to the job summary.
func (a *Actions) AppendSummary(markdown string) error {
	if a == nil || a.Summary == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !strings.HasSuffix(markdown, "\n") {
		markdown += "\n"
	}
	if _, err := io.WriteString(a.Summary, markdown); err != nil {
		return fmt.Errorf("github: append to the job summary (GITHUB_STEP_SUMMARY): %w", err)
	}
	return nil
}
