// Package rescue provides stand-ins for an Elastic Metal server's rescue
// system, so that the worker's image write runs against a real SSH server
// without touching a real disk:
//
//   - Start: an in-process SSH server (x/crypto/ssh, server side) with a new
//     host key at every start, like a fresh rescue boot. Its exec sessions
//     run a small interpreter for the commands the bot sends (the probe,
//     lsblk -J, sudo … bash -c '<pipeline>', dd if=… | sha256sum, sync),
//     against a file standing for the disk /dev/sda. Used by unit tests,
//     the emulated world and `bot sim`.
//   - StartSSHD (test helper in sshd.go): a real OpenSSH sshd on loopback
//     whose sessions read their command with dash, see only the rescue tools
//     on PATH, and meet shims (sudo, id, lsblk, dd) that map /dev/sda to a
//     file and keep it from a session that did not go through sudo, for
//     integration tests of the real shell path.
//
// # Contract
//
// Every behaviour both stand-ins enforce, and where it comes from. "docs"
// is github.com/scaleway/docs-content (pages/elastic-metal/…), published
// at https://www.scaleway.com/en/docs/elastic-metal/.
//
//	| behaviour | source |
//	|---|---|
//	| the login is the user "rescue", with the keys given to the rescue reboot or the rescue password | docs how-to/use-rescue-mode.mdx ("ssh rescue@…", "log in using the rescue user and your SSH key … or the password displayed in the console") |
//	| the login is a regular user, not root (id -u is 1000); root only through sudo | docs troubleshooting/troubleshoot-rescue-your-data.mdx ("Gaining root access": logged in as a regular user, sudo su) |
//	| sudo asks for the rescue password (Options.Password; SSHD.Password); SudoNoPassword turns it off | same page ("Enter the rescue user password displayed in the Scaleway console"); passwordless: source silent, tests cover both |
//	| sudo -S reads the password from stdin, byte by byte; -n fails "a password is required"; without -S and without a terminal it cannot ask; -p sets the prompt; three wrong tries fail | sudo(8) (sudo 1.9, options -S, -n, -p; passwd_tries=3 in sudoers(5)) |
//	| /dev/sda opens only for root ("Permission denied" otherwise) | Ubuntu udev: block devices root:disk 0660 (the rescue OS is Ubuntu: docs how-to/use-rescue-mode.mdx) |
//	| the session's command is read by /bin/sh, not bash: pipefail and >( ) are refused as dash refuses them (exit 2) | source silent on the rescue user's shell: stricter reading chosen; dash 0.5.12 messages; sshd runs "<login shell> -c <command>" (OpenSSH session.c) |
//	| bash -c runs bash's dialect (pipefail, process substitution); exec 3>&1 copies standard output to fd 3, and >&3 without it fails "3: Bad file descriptor" | bash(1) (REDIRECTION, Duplicating File Descriptors) |
//	| command -v NAME finds only the image's tools; Options.Missing / SSHDOptions.Missing remove some (e.g. zstd) | source silent on the rescue image's package list: tests cover both |
//	| lsblk -J -b answers without root; a RAM-backed loop device is listed and must not be chosen | util-linux lsblk(8) JSON output; docs how-to/use-rescue-mode.mdx ("runs entirely in the server's RAM") |
//	| curl -f fails with exit 22 on an HTTP error; dd reports "N bytes … copied" on stderr, with status=progress every second as "\r<stats>" with no newline until the next report or the final stats; dd of= past the disk's end fails "No space left on device" | curl(1), GNU coreutils dd(1) and src/dd.c (print_xfer_stats, print_stats; coreutils 9.x) |
//	| zstd -dc / xz -dc decompress (the CLI when installed, else the factory stand-in's raw/RLE or uncompressed-LZMA2 subset) | zstd(1), xz(1) |
//	| a new host key at every start | each rescue boot is a fresh RAM system (docs how-to/use-rescue-mode.mdx) |
//	| Options.CredentialsAfter: sshd answers but refuses every login for a while after the start (off by default) | source silent: the docs say the keys of ssh_key_ids are installed on the rescue image and the password shown (docs how-to/use-rescue-mode.mdx; scaleway-sdk-go v1.39.0 api/baremetal/v1/baremetal_sdk.go RebootServerRequest.SSHKeyIDs, "additional SSH public key IDs to configure on rescue image"), not that both are in place before sshd answers: stricter reading chosen for the bot's tests |
//	| an unknown command exits 127 ("sh: 1: X: not found", "bash: line 1: X: command not found") | dash and bash messages |
package rescue
