// Package rescue owns the worker's rescue session (SPEC §5, second
// operation): over SSH (x/crypto/ssh) to the Elastic Metal server booted in
// rescue mode, it waits for SSH, records the rescue host key (new at every
// rescue boot, so trust-on-first-use, refused when an expected key differs),
// finds the install disk with lsblk, streams the Talos metal raw.zst with
// curl | zstd -dc | dd (the rescue system fetches the image itself; the
// runner never carries it), checks what was written, and syncs. Rebooting to
// normal mode is the caller's job, through the Elastic Metal API.
//
// The check: the write pipeline hashes exactly the bytes handed to dd
// (tee >(sha256sum)), dd reports how many bytes it wrote, and after sync the
// same number of bytes is read back from the device with O_DIRECT (so from
// the disk, not the page cache) and hashed again. Equal hashes prove the disk
// holds the decompressed image, without trusting a published checksum (the
// Image Factory publishes none for the decompressed raw image).
//
// The commands need bash (pipefail, process substitution), curl, zstd,
// lsblk, dd, sha256sum and sync, all present in Scaleway's rescue image.
package rescue
