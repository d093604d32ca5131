//go:build !sim

package main

import (
	"context"
	"flag"
	"fmt"
)

// The production build (the one the Action runs) links no stand-in: `sim`, `demo` and `soak` are
// built with `-tags sim` (make demo, make soak, make test do). Here they only say where they went.
func demoCommand() *command { return simOnly("demo") }
func simCommand() *command  { return simOnly("sim") }
func soakCommand() *command { return simOnly("soak") }

func simOnly(name string) *command {
	return &command{
		name:    name,
		summary: "the emulated world: only in the sim build (`make demo`, or go build -tags sim ./cmd/bot)",
		run: func(context.Context, *app, *flag.FlagSet) error {
			return fmt.Errorf("%s: this is the production build, which links no stand-in: run `make demo`, or build with `go build -tags sim -o bin/bot ./cmd/bot`", name)
		},
	}
}
