#!/usr/bin/env bash
# fetch-bot.sh: download the pocbot release archive for this machine's OS and architecture, verify
# it against the sha256 that the Action's own commit holds (action/checksums.txt, committed by the
# release workflow), and unpack `bot` (tar.zst: `zstd` must be installed, as it is on GitHub's Ubuntu
# and macOS images; .goreleaser.yaml says why zstd). Nothing downloaded or cached is trusted: no checksums.txt is
# ever fetched or read from the cache, so pinning the Action's commit SHA pins the binary's bytes. A
# missing or mismatching checksum stops here with an error: nothing unverified is ever run.
#
# Environment:
#   POCBOT_VERSION      release tag, e.g. v0.2.0 (required; the Action reads it from action/version)
#   POCBOT_CHECKSUMS    the pinned checksums file (required; the Action's action/checksums.txt)
#   POCBOT_RELEASE_URL  base of the release downloads (default
#                       https://github.com/pocbot/pocbot/releases/download); the archive is
#                       $POCBOT_RELEASE_URL/$POCBOT_VERSION/pocbot_<ver>_<os>_<arch>.tar.zst
#   POCBOT_DIR          where to keep the archive and the binary (default $RUNNER_TEMP/pocbot or a temp dir);
#                       an archive already there (from the Action's cache) is verified again, not trusted
#   RUNNER_OS, RUNNER_ARCH  as GitHub sets them (Linux/macOS, X64/ARM64); uname otherwise
# Prints the binary's path on stdout, and writes path=… to $GITHUB_OUTPUT when set.
set -euo pipefail

die() {
  # ::error:: makes the message the job's annotation on GitHub; plain text elsewhere.
  if [ -n "${GITHUB_ACTIONS:-}" ]; then echo "::error title=pocbot download::$*" >&2; else echo "fetch-bot: $*" >&2; fi
  exit 1
}

version="${POCBOT_VERSION:-}"
[ -n "$version" ] || die "POCBOT_VERSION is not set: give a release tag such as v0.2.0 (or version: source in the Action)"
# A tag names files here: letters, digits, '.', '-' and '+' only (no path).
case "$version" in
  *[!A-Za-z0-9.+-]*) die "POCBOT_VERSION=$version is not a release tag like v0.2.0" ;;
  v[0-9]*) ;;
  *) die "POCBOT_VERSION=$version is not a release tag like v0.2.0" ;;
esac
sums="${POCBOT_CHECKSUMS:-}"
[ -s "${sums:-/nonexistent}" ] || die "POCBOT_CHECKSUMS=${sums:-<unset>} is not a checksums file: this commit of the Action pins no release (pin the commit SHA of a release tag, or use version: source)"
base="${POCBOT_RELEASE_URL:-https://github.com/pocbot/pocbot/releases/download}"
dir="${POCBOT_DIR:-${RUNNER_TEMP:-$(mktemp -d)}/pocbot}"

os="${RUNNER_OS:-$(uname -s)}"
case "$os" in
  Linux | linux) os=linux ;;
  macOS | Darwin | darwin) os=darwin ;;
  *) die "no pocbot release for OS $os: releases exist for Linux and macOS" ;;
esac
arch="${RUNNER_ARCH:-$(uname -m)}"
case "$arch" in
  X64 | x86_64 | amd64) arch=amd64 ;;
  ARM64 | aarch64 | arm64) arch=arm64 ;;
  *) die "no pocbot release for architecture $arch: releases exist for amd64 and arm64" ;;
esac

archive="pocbot_${version#v}_${os}_${arch}.tar.zst"
# Before any download: without zstd nothing could be unpacked.
command -v zstd >/dev/null 2>&1 || die "zstd is not installed: it unpacks $archive (GitHub's Ubuntu and macOS runners have it; on a self-hosted runner: apt-get install zstd, or brew install zstd)"
mkdir -p "$dir"
cd "$dir"

fetch() { # URL FILE
  curl --fail --silent --show-error --location --retry 3 --retry-delay 1 --connect-timeout 10 --max-time 300 \
    --proto '=https,http' -o "$2.part" "$1" || die "download $1 failed"
  mv "$2.part" "$2"
}

# Whatever a cache restored besides the archive is not ours to read: a checksums.txt or a bot next
# to it could have been planted together with the archive (as a file, a symlink or a directory;
# rm does not follow a symlink).
rm -rf -- checksums.txt bot

# The pinned sums, read without a subprocess: "<sha256>  <file>" (or "<sha256> *<file>") per line.
want=""
while read -r sum file _ || [ -n "${sum:-}" ]; do
  if [ "$file" = "$archive" ] || [ "$file" = "*$archive" ]; then want="$sum"; fi
done <"$sums"
[ -n "$want" ] || { rm -rf -- "$archive"; die "$archive is not listed in the Action's pinned checksums ($sums) of $version: refusing to run an unverified binary"; }

# sha256 FILE: its lowercase hex sha256. OpenSSL first: it uses the CPU's SHA instructions, where
# coreutils' sha256sum (Debian, Ubuntu) and Perl's shasum (macOS) do not (35 MB on the development
# machine: openssl 0.03-0.04 s of CPU, sha256sum 0.18-0.28 s, shasum 0.21-0.29 s). GitHub's runner
# images list OpenSSL (3.x on Ubuntu, 1.1.1 or 3.x on macOS). Any output that is not 64 hex digits
# falls through to the next tool, and a wrong digest can only refuse the archive, never accept one.
sha256() {
  local out
  if command -v openssl >/dev/null 2>&1 && out="$(openssl dgst -sha256 <"$1" 2>/dev/null)"; then
    out="${out##* }" # "SHA2-256(stdin)= <hex>" (OpenSSL 3), "(stdin)= <hex>" or "<hex>" (LibreSSL)
    if [[ "$out" =~ ^[0-9a-f]{64}$ ]]; then echo "$out"; return; fi
  fi
  if command -v sha256sum >/dev/null 2>&1; then
    out="$(sha256sum <"$1")"
  elif command -v shasum >/dev/null 2>&1; then
    out="$(shasum -a 256 <"$1")"
  else
    die "no sha256 program on this runner (openssl, sha256sum or shasum): $1 cannot be verified, so nothing was run; install coreutils or openssl"
  fi
  echo "${out%% *}"
}

if [ -s "$archive" ]; then
  got="$(sha256 "$archive")"
  if [ "$got" != "$want" ]; then
    rm -rf -- "$archive" # a directory in its place too
    die "checksum mismatch for the cached $archive of $version: the Action's commit pins $want, the cache holds $got. The cache entry is poisoned or stale: nothing was run; delete it (gh cache delete --repo \$GITHUB_REPOSITORY pocbot-$version-…) and rerun"
  fi
else
  fetch "$base/$version/$archive" "$archive"
  got="$(sha256 "$archive")"
  if [ "$got" != "$want" ]; then
    rm -f "$archive"
    die "checksum mismatch for $archive of $version: the Action's commit pins $want, the download is $got. The archive was removed and nothing was run; retry, and report it if it persists"
  fi
fi

# zstd -d | tar rather than tar --zstd: GNU tar runs the zstd program for --zstd anyway, and whether
# macOS's bsdtar links libzstd is not documented; both read a plain tar from stdin.
zstd -dcq "$archive" | tar -xf - bot || { rm -rf -- bot; die "unpacking bot from $archive failed (it matched the pinned sha256): check zstd and the disk space in $dir"; }
# goreleaser packs bot as a regular file; anything else (a symlink would be chmod-ed and run
# wherever it points) is a release built wrong: refuse it.
if [ -L bot ] || [ ! -f bot ]; then
  rm -rf -- bot
  die "bot in $archive is not a regular file (it matched the pinned sha256, so the release itself is wrong): nothing was run; report it"
fi
chmod 0755 bot
echo "$dir/bot"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "path=$dir/bot" >>"$GITHUB_OUTPUT"
fi
