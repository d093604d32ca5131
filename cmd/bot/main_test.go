package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The bot binary is built at most once per test run (a build costs seconds on 2 cores) into a
// directory TestMain removes at the end; tests that run it call buildBot.
var testBin struct {
	dir  string
	once sync.Once
	path string
	out  []byte
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pocbot-bot-test-")
	if err != nil {
		panic(err)
	}
	testBin.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildBot returns the path of the bot built from this package (once per test run).
func buildBot(t testing.TB) string {
	t.Helper()
	testBin.once.Do(func() {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		testBin.path = filepath.Join(testBin.dir, "bot")
		// The release's own build (its flags, tags and environment): the tests run what users
		// download, and TestReleaseBinaryKeepsDeadMethodElimination's build then only links.
		args, env := releaseBuild(t, testBin.path)
		cmd := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
		cmd.Env = env
		testBin.out, testBin.err = cmd.CombinedOutput()
	})
	if testBin.err != nil {
		t.Fatalf("go build the bot: %v\n%s", testBin.err, testBin.out)
	}
	return testBin.path
}
