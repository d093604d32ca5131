// Package imagefactory is a stand-in for the Talos Image Factory
// (https://factory.talos.dev) that speaks the part of its HTTP API the bot
// uses: POST /schematics, and GET/HEAD /image/<schematic>/<version>/<artifact>
// for scaleway-amd64.qcow2 (and metal-amd64.qcow2), metal-amd64.raw.zst and
// metal-amd64.raw.xz (the worker's fallback when its rescue system has no
// zstd).
//
// Schematic ids are computed like the real factory's: the sha256 of the
// schematic re-marshalled to canonical YAML, so the empty schematic has the
// well-known id 376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba
// (checked against the image-factory project's own test vectors).
//
// Images are generated on the fly from a seed (schematic, version, artifact):
// a QCOW2 header ("QFI\xfb") plus pseudo-random filler, or a raw GPT-looking
// disk wrapped in a hand-written zstd frame or xz stream (the same raw bytes
// in both). Nothing is buffered, so a 1 GiB
// image costs no memory; Range and HEAD are served by http.ServeContent. The
// stand-in counts the bytes it serves, so tests can prove reuse (0 bytes).
//
// # Contract
//
// Every behaviour the stand-in enforces, and where it comes from ("factory"
// is github.com/siderolabs/image-factory at v1.5.0-4-g26b95ca).
//
//	| behaviour | source |
//	|---|---|
//	| POST /schematics answers 201 {"id": …}; the id is the sha256 of the canonical YAML | factory pkg/schematic/schematic.go (Marshal, ID); internal/frontend/http/http.go route /schematics |
//	| unknown schematic fields are refused (400) | factory pkg/schematic/schematic.go (KnownFields(true)) |
//	| GET and HEAD /image/:schematic/:version/:path; other methods refused | factory internal/frontend/http/http.go (routes registered for GET and HEAD only) |
//	| an unknown schematic or artifact is a 404 | factory internal/frontend/http/http.go (ErrNotFoundTag → 404) |
//	| artifact names <platform>-<arch>.qcow2, .raw.zst and .raw.xz | factory internal/profile/profile.go ParseFromPath (disk formats, output formats .xz and .zst); docs/api.md "metal-amd64.raw.xz" |
//	| .raw.xz and .raw.zst hold the same raw image | factory internal/integration/download_test.go (both checked against the same partitions) |
//	| Content-Type application/x-xz, application/zstd, application/x-qemu-disk | factory internal/mime/mime.go; download_test.go expects application/zstd for .raw.zst |
//	| Range requests answered 206; HEAD gives the length without a body | docs/api.md (HEAD returns the same headers as GET); net/http ServeContent |
//	| the empty schematic's id is 376567988ad3… | factory's own test vectors (pkg/schematic tests) |
//	| another id than the canonical YAML's sha256 (Options.OtherIDs) | register: schematic-id, reading different (the live factory's version is not pinned) |
package imagefactory
