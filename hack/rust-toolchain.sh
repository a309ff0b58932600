#!/usr/bin/env bash
# Makes the toolchain that rust-toolchain.toml pins usable here without a download.
#
# rustup resolves the pin `channel = "X.Y.Z"` to the toolchain directory
# $RUSTUP_HOME/toolchains/X.Y.Z-<host>, and when that is missing it downloads the release
# from the Rust distribution server (or, with RUSTUP_AUTO_INSTALL=0, refuses to run
# cargo). A machine whose rustup installed the same release as `stable` has it already
# under another name. This script gives that installed toolchain the pinned name too, a
# symbolic link in $RUSTUP_HOME/toolchains (rustup then lists it as installed, with its
# components); `rustup toolchain link` cannot, as it refuses release names for custom
# toolchains. When no installed toolchain is of that release, it fails and says how to
# install one. Without rustup, the rustc on PATH must be of that release.
#
# hack/test.sh runs it before any cargo command; so do the scripts that build (image.sh).
# Idempotent and quick. Prints the toolchain's name on its last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

log() { echo "[rust-toolchain $(date +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

channel=$(sed -n 's/^channel = "\(.*\)"$/\1/p' "$repo/rust-toolchain.toml")
[ -n "$channel" ] || die "no channel = \"...\" in rust-toolchain.toml"
components=(rustfmt cargo-clippy)

# The release a rustc binary reports ("rustc 1.95.0 (...)" -> 1.95.0).
release_of() { "$1" --version 2>/dev/null | cut -d' ' -f2; }

if ! command -v rustup >/dev/null; then
  have=$(release_of rustc)
  [ "$have" = "$channel" ] \
    || die "rustc on PATH is ${have:-missing}, rust-toolchain.toml pins $channel, and there is no rustup to choose"
  log "no rustup: rustc $have on PATH is the pinned release"
  echo "$channel"
  exit 0
fi

rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
# Outside the repository, so that rustup does not resolve the pin while we ask.
host=$(cd / && rustup show 2>/dev/null | sed -n 's/^Default host: //p')
[ -n "$host" ] || die "rustup show names no default host"
name="$channel-$host"
pinned="$rustup_home/toolchains/$name"

# Whether a toolchain directory is of the pinned release and has rustfmt and clippy.
fits() {
  [ -x "$1/bin/rustc" ] && [ "$(release_of "$1/bin/rustc")" = "$channel" ] || return 1
  for component in "${components[@]}"; do [ -x "$1/bin/$component" ] || return 1; done
}

if [ -e "$pinned" ]; then
  fits "$pinned" || die "$pinned is not rust $channel with rustfmt and clippy"
  log "rust $channel is installed as $name"
  echo "$name"
  exit 0
fi

for dir in "$rustup_home"/toolchains/*; do
  [ -d "$dir" ] || continue
  if fits "$dir"; then
    ln -s "$(basename "$dir")" "$pinned"
    log "rust $channel is installed as $(basename "$dir"): linked as $name (no download)"
    echo "$name"
    exit 0
  fi
done
die "no installed toolchain is rust $channel with rustfmt and clippy: rustup toolchain install $channel --profile minimal --component rustfmt,clippy (from the Rust distribution server)"
