# pocbot — build, test, lint, bench, demo. Every target works from a clean clone once .ci/run's tools
# (versitygw, actionlint, openssh-server) are installed; `make test` says how when one is missing.
GO       ?= go
GOBIN    := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: build test crash lint bench demo fuzz soak clean generate release-snapshot goreleaser fidelity

GORELEASER_VERSION := v2.15.1

build:
	$(GO) build -trimpath -tags=grpcnotrace -ldflags "-X github.com/pocbot/pocbot/internal/version.Version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o bin/bot ./cmd/bot

# The release archives and checksums.txt of .goreleaser.yaml, built locally into dist/ (nothing is
# published). goreleaser is installed with `go install` when missing.
release-snapshot: goreleaser
	goreleaser release --snapshot --clean

goreleaser:
	@command -v goreleaser >/dev/null 2>&1 || $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

# Files generated from the settings table (internal/settings): deploy/poc.example.yml,
# docs/configuration.md; and from the assumptions register (internal/assume):
# docs/assumptions.md. A test fails while one is stale.
generate:
	$(GO) generate ./internal/settings ./internal/assume

# The stand-ins' commands (sim, demo, soak) are built only with this tag: the production binary
# (`make build`, the release, the Action) links none of internal/sim (cmd/bot/lean_test.go).
SIMTAGS  := -tags sim

# -race everywhere; the tests start the real servers they need (versitygw, sshd) on loopback.
# The suite is CPU-bound: one more package at a time than there are cores (-p; 3 on CI's two),
# every process on one P (GOMAXPROCS=1: the go command, the compilers, the test binaries and what
# they start). Measured from fresh clones on two cores, with the other flags below:
#   -p 2, two Ps a process          477-501 s  847-910 CPU-s
#   -p 3, two Ps a process          550 s     1,063 CPU-s
#   -p 3, -cpu 1 (the tests only)   460 s       882 CPU-s
#   -p 3, GOMAXPROCS=1              409 s       783 CPU-s
# Likely why (the figures say how much, no profile says why): a process of two Ps spins its idle
# P looking for work and has the race detector order two threads running at once; the third
# package uses what the others leave idle while they wait on leases and servers. The race
# detector reports accesses unordered by happens-before, which one P still interleaves
# (goroutines are preempted and switch at every wait). Two parallel tests in a package:
# -parallel 4 spent 975 CPU-s where 2 spends 858 (contended worlds poll, renew and retry longer).
# What costs time and finds nothing:
#   GORACE=atexit_sleep_ms=0  a race-built binary sleeps 1 s as it exits, for races of threads
#                             still running then; a test binary has none left (69 binaries: 69 s).
#   -ldflags='-s -w'          no symbol table or DWARF in the test binaries (race reports and
#                             panics read the runtime's own tables): a fifth of each link.
#   -vet=off                  `make lint` vets every package, tests and the sim tag included.
#   GOGC=400                  the race detector shadows the heap, and every collection frees and
#                             re-tracks it: clusterops 119 CPU-s (800: 132, off: 190 and 7.8 GB).
NPROC    := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
TESTP    ?= $(shell expr $(NPROC) + 1)
TESTFLAGS := $(SIMTAGS) -race -p $(TESTP) -parallel 2 -vet=off -ldflags='-s -w' -timeout 14m
# go test builds, links and runs the packages in the order they are named, -p actions at a time,
# and a test run holds its slot until its package's last test ends, however little it computes.
# The longest runs come first, so that the other packages' compiles and runs fill in beside them
# instead of trailing behind (./...'s order left the statestore's and the Scaleway driver's tests
# to the end).
LONGEST := ./cmd/bot ./internal/clusterops ./internal/chatops ./internal/provision/scaleway \
	./internal/statestore ./internal/reaper
test:
	GOMAXPROCS=1 GORACE=atexit_sleep_ms=0 GOGC=400 $(GO) test $(TESTFLAGS) $(LONGEST) ./...

# A pause and a resume crashed at every save of a clean run, each then run again (three worlds
# beside the one `make test` runs: internal/clusterops/pausecrash_test.go). Run it when the pause or
# resume graphs, the engine's saves or the saver change.
crash:
	POC_CRASH_EVERY_SAVE=1 $(GO) test $(SIMTAGS) -race -count=1 -timeout 30m -run '^TestPauseAndResumeCrashAtEveryStep$$' ./internal/clusterops

lint: goreleaser
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet $(SIMTAGS) ./cmd/bot
	@# go.mod and go.sum say what the code imports, no more, no less (fails with the diff).
	$(GO) mod tidy -diff
	@# No function that nothing reaches, tests and the sim build included
	@# (golang.org/x/tools/cmd/deadcode, pinned in .ci/run).
	@dead=$$(deadcode -test $(SIMTAGS) ./...) || exit 1; \
	  if [ -n "$$dead" ]; then echo "dead code (remove it, or use it):"; echo "$$dead"; exit 1; fi
	@# The repository's tests need nothing outside it (a clone from GitHub has no ../shared).
	@if git grep -nE '\.\./shared|/work/shared' -- ':!*.md' ':!.gitattributes' ':!Makefile'; then \
	  echo "the files above read outside the repository: carry what they need into testdata"; exit 1; fi
	actionlint .github/workflows/*.yml deploy/workflow/*.yml
	# actionlint reads only workflows: the Action's steps are linted inside a generated one.
	$(GO) test -count=1 -run '^TestAction' ./action
	@if command -v shellcheck >/dev/null 2>&1; then shellcheck action/*.sh .githooks/commit-msg; fi
	goreleaser check

bench:
	$(GO) test $(SIMTAGS) -run '^$$' -bench . -benchmem -benchtime 3x ./...

# Short fuzz runs of every parser (their seed corpora, and the crashers found, also run in `make test`).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 20s ./internal/commands
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime 10s ./internal/commands
	$(GO) test -run '^$$' -fuzz '^FuzzClusterName$$' -fuzztime 10s ./internal/commands
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime 20s ./internal/github
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 20s ./internal/statestore
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 10s ./internal/repoconfig
	$(GO) test -run '^$$' -fuzz '^FuzzParseDecimal$$' -fuzztime 10s ./internal/cost
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime 20s ./internal/record/redactfuzz

demo:
	$(GO) run $(SIMTAGS) ./cmd/bot demo

# Replays recorded cassettes (`bot up|down|pause|resume --record DIR`, the Action's recording
# artifact) against the stand-ins and prints the match rate and every mismatch
# (internal/sim/fidelity, docs/recording.md). CASSETTES= the directory; without it, the recordings
# under internal/sim/fidelity/testdata.
CASSETTES ?=
fidelity:
	$(GO) test $(SIMTAGS) -count=1 -v -run '^TestRecordedFidelity$$' ./internal/sim/fidelity $(if $(CASSETTES),-args -cassettes $(abspath $(CASSETTES)))

# Seeded random histories against the emulated world, invariants checked after every step
# (internal/sim/soak). DURATION= how long to draw new histories (default 2m); SEED= replays one
# history, KEEP= only the listed events of it (the shrunk replay a failing soak prints); PARALLEL=
# histories at once (default 8 per core); NOPOOL=1 without the warm pool's scenes.
DURATION ?= 2m
SEED     ?=
KEEP     ?=
PARALLEL ?=
NOPOOL   ?=
soak:
	$(GO) build $(SIMTAGS) -o bin/bot-sim ./cmd/bot
	./bin/bot-sim soak --duration $(DURATION) $(if $(PARALLEL),--parallel $(PARALLEL)) $(if $(SEED),--seed $(SEED)) $(if $(KEEP),--keep $(KEEP)) $(if $(NOPOOL),--no-pool)

clean:
	rm -rf bin dist
