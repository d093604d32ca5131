// Package imagefactory is a stand-in for the Talos Image Factory
// (https://factory.talos.dev) that speaks the part of its HTTP API the bot
// uses: POST /schematics, and GET/HEAD /image/<schematic>/<version>/<artifact>
// for scaleway-amd64.qcow2 (and metal-amd64.qcow2) and metal-amd64.raw.zst.
//
// Schematic ids are computed like the real factory's: the sha256 of the
// schematic re-marshalled to canonical YAML, so the empty schematic has the
// well-known id 376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba
// (checked against the image-factory project's own test vectors).
//
// Images are generated on the fly from a seed (schematic, version, artifact):
// a QCOW2 header ("QFI\xfb") plus pseudo-random filler, or a raw GPT-looking
// disk wrapped in a hand-written zstd frame. Nothing is buffered, so a 1 GiB
// image costs no memory; Range and HEAD are served by http.ServeContent. The
// stand-in counts the bytes it serves, so tests can prove reuse (0 bytes).
package imagefactory
