// Package rescue owns the worker's rescue session (docs/seed.md, Work outside the state, second
// operation): over SSH (x/crypto/ssh) to the Elastic Metal server booted in
// rescue mode, it waits for SSH (and, for Target.AuthGrace, for credentials
// that sshd refuses right after the boot), records the rescue host key (new at every
// rescue boot, so trust-on-first-use, refused when an expected key differs),
// probes the rescue system (who it runs as, its tools, whether sudo wants a
// password), finds the install disk with lsblk, streams the Talos metal
// raw.zst with curl | zstd -dc | dd (the raw.xz with xz -dc when the rescue
// system has no zstd; the rescue system fetches the image itself, the runner
// never carries it), checks what was written, and syncs. Rebooting to normal
// mode is the caller's job, through the Elastic Metal API.
//
// The rescue login. Scaleway's Elastic Metal rescue system is logged into as
// the user "rescue" with the keys given to the rescue reboot or the password
// shown in the console (docs-content pages/elastic-metal/how-to/
// use-rescue-mode.mdx); it is a regular user that becomes root with sudo and
// that same password (pages/elastic-metal/troubleshooting/
// troubleshoot-rescue-your-data.mdx, "Gaining root access"). The API's
// rescue_server may be empty or late, so the user defaults to "rescue" and
// the key alone logs in; sudo's password is asked for only when sudo wants
// one. The login shell is not assumed to be bash: the probe and lsblk are
// plain POSIX sh, and the pipelines run as "sudo … bash -c '<script>'".
//
// The check: the write pipeline hashes exactly the bytes handed to dd
// (tee >(sha256sum)), dd reports how many bytes it wrote, and after sync the
// same number of bytes is read back from the device with O_DIRECT (so from
// the disk, not the page cache) and hashed again. Equal hashes prove the disk
// holds the decompressed image, without trusting a published checksum (the
// Image Factory publishes none for the decompressed raw image).
//
// The commands need bash (pipefail, process substitution), sudo (unless the
// login is root), curl, zstd or xz, lsblk, dd, sha256sum and sync; the probe
// names what is missing before anything is written.
package rescue
