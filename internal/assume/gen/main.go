// Command gen writes docs/assumptions.md from the register (internal/assume). Run it with `make
// generate` or `go generate ./internal/assume`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pocbot/pocbot/internal/assume"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	if err := os.WriteFile(filepath.Join(*root, assume.DocPath), assume.Markdown(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}
