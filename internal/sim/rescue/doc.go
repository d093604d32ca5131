// Package rescue provides stand-ins for an Elastic Metal server's rescue
// system, so that the worker's image write runs against a real SSH server
// without touching a real disk:
//
//   - Start: an in-process SSH server (x/crypto/ssh, server side) with a new
//     host key at every start, like a fresh rescue boot. Its exec sessions
//     run a tiny interpreter for the commands the bot sends (lsblk -J, the
//     set -o pipefail; curl | zstd -dc | tee >(sha256sum >&2) | dd pipeline,
//     dd if=… | sha256sum, sync), against a file standing for the disk
//     /dev/sda. Used by unit tests and `bot sim`.
//   - StartSSHD (test helper in sshd.go): a real OpenSSH sshd on loopback
//     whose sessions see shims (lsblk, dd) first on PATH, mapping /dev/sda to
//     a file, for integration tests of the real shell path.
package rescue
