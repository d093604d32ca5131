# pocbot — build, test, lint, bench, demo. Every target works from a clean clone once .ci/run's tools
# (versitygw, actionlint, openssh-server) are installed; `make test` says how when one is missing.
GO       ?= go
GOBIN    := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: build test lint bench demo fuzz soak clean

build:
	$(GO) build -o bin/bot ./cmd/bot

# -race everywhere; the tests start the real servers they need (versitygw, sshd) on loopback.
test:
	$(GO) test -race -timeout 14m ./...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@# The repository's tests need nothing outside it (a clone from GitHub has no ../shared).
	@if git grep -nE '\.\./shared|/work/shared' -- ':!*.md' ':!.gitattributes' ':!Makefile'; then \
	  echo "the files above read outside the repository: carry what they need into testdata"; exit 1; fi
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

# Seeded random histories against the emulated world, invariants checked after every step
# (internal/sim/soak). DURATION= how long to draw new histories (default 2m); SEED= replays one
# history, KEEP= only the listed events of it (the shrunk replay a failing soak prints).
DURATION ?= 2m
SEED     ?=
KEEP     ?=
PARALLEL ?= 4
soak:
	$(GO) build -o bin/bot ./cmd/bot
	./bin/bot soak --duration $(DURATION) --parallel $(PARALLEL) $(if $(SEED),--seed $(SEED)) $(if $(KEEP),--keep $(KEEP))

clean:
	rm -rf bin
