// Command bot is pocbot's single binary: the GitHub Actions entry point (`bot handle`), the operator
// CLI (up, down, cost, status, reap, kubeconfig, talosconfig, images, state) and the emulated world
// (`bot sim`, `bot demo`). It only parses flags and environment variables and wires packages together;
// the work is done in internal/.
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
