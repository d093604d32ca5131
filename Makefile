# pocbot — build, test, lint, bench, demo. Every target works from a clean clone once .ci/run's tools
# (versitygw, actionlint, openssh-server) are installed; `make test` says how when one is missing.
GO       ?= go
GOBIN    := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: build test lint bench demo fuzz clean generate

build:
	$(GO) build -o bin/bot ./cmd/bot

# Files generated from the settings table (internal/settings): deploy/poc.example.yml,
# docs/configuration.md. A test fails while they are stale.
generate:
	$(GO) generate ./internal/settings

# -race everywhere; the tests start the real servers they need (versitygw, sshd) on loopback.
test:
	$(GO) test -race -timeout 14m ./...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	actionlint .github/workflows/*.yml deploy/workflow/*.yml

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./...

# Short fuzz runs of every parser (their seed corpora, and the crashers found, also run in `make test`).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 20s ./internal/commands
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime 10s ./internal/commands
	$(GO) test -run '^$$' -fuzz '^FuzzClusterName$$' -fuzztime 10s ./internal/commands
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime 20s ./internal/github
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 20s ./internal/statestore
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 10s ./internal/repoconfig
	$(GO) test -run '^$$' -fuzz '^FuzzParseDecimal$$' -fuzztime 10s ./internal/cost

demo:
	$(GO) run ./cmd/bot demo

clean:
	rm -rf bin
