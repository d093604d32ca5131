// Command bot is pocbot's single binary: the GitHub Actions entry point (`bot handle`), the
// operator CLI (up, down, cost, status, reap, kubeconfig, talosconfig, machineconfig, images,
// state, pool), the installation commands (app, init, doctor, uninstall), and the emulated world
// (`bot sim`, `bot demo`, `bot soak`, built with the sim tag).
//
// It parses flags and environment variables, opens its parts through internal/wiring (the one
// constructor the test worlds use too), calls the operations (internal/clusterops, reaper,
// chatops, repoinit …) and prints their results. A command run by a workflow is scoped to the
// workflow's repository by clusterops.Owned's rule (scope.go). What it decides itself is an
// operator's concern only: which shared images `images prune` may delete (images.go), and the
// demo's script and checks (demo.go).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr *os.File, getenv func(string) string) int {
	app := newApp(stdout, stderr, getenv)
	if err := app.dispatch(ctx, args); err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 1
	}
	return 0
}
