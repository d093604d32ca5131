// Package record writes the bot's HTTP exchanges with Scaleway, Object Storage and GitHub into
// go-vcr v4 cassettes (gopkg.in/dnaeon/go-vcr.v4, cassette format version 2: the format of the
// project's recorded fixtures, internal/sim/scaleway/testdata/cassettes), redacted before a byte
// reaches the disk, so that a user's real run can be attached to an issue and replayed against the
// stand-ins (`make fidelity`, internal/sim/fidelity).
//
// It owns three things:
//
//   - Wrap, the transport wrapper internal/wiring and internal/github put under every client they
//     open when the setting `record` (POC_RECORD_DIR, `--record DIR`) names a directory. With the
//     setting empty Wrap returns the transport it was given, so a run that does not record pays
//     nothing.
//   - The cassette writer: one file per process in the directory, each exchange appended as it
//     completes, so a run killed half-way (a job's timeout) still leaves every exchange it
//     finished. The writer is this package's own (it emits go-vcr's field names and layout with
//     the YAML library the bot already links): go-vcr's cassette package imports "testing" and
//     net/http/httptest in a non-test file (pkg/cassette/server_replay.go @v4.0.8), which the
//     production binary must not link (cmd/bot/lean_test.go). The tests read what it writes with
//     go-vcr itself.
//   - Redactor, the pure function from an exchange to the exchange without its secrets (redact.go
//     lists every kind and how it is recognised).
//
// Only HTTP is recorded. The Talos API is gRPC over HTTP/2 with mutual TLS to each node, opened by
// internal/provision/talos, not through these clients; its calls are not recorded (docs/recording.md
// says why). Neither are the Image Factory's downloads (hundreds of megabytes of public images) nor
// the runner-address echo.
package record
