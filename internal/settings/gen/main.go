// Command gen writes the files generated from internal/settings: deploy/poc.example.yml and
// docs/configuration.md. Run it with `make generate` or `go generate ./internal/settings`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pocbot/pocbot/internal/settings"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	for path, data := range map[string][]byte{settings.ExamplePath: settings.ExampleYAML(), settings.DocPath: settings.Markdown()} {
		if err := os.WriteFile(filepath.Join(*root, path), data, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "gen: %v\n", err)
			os.Exit(1)
		}
	}
}
