#!/usr/bin/env bash
# Builds, once per version, cargo-deny (advisories, licenses, bans, sources of the
# dependency graph; deny.toml), with `cargo install --locked` from crates.io: its own
# Cargo.lock, no download site.
#
# The binary lands outside the clone, keyed on its version, so a fresh clone (CI)
# reuses it:  $KOPF_AUDIT_CACHE/bin-cargo-deny-<ver>/bin/cargo-deny
# Prints the binary's path on its last line of stdout; progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
CARGO_DENY_VERSION=0.20.2
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-cargo-deny-${CARGO_DENY_VERSION}"

log() { echo "[build-cargo-deny $(date +%H:%M:%S)] $*" >&2; }

if [ -x "$out/bin/cargo-deny" ]; then
  log "cached: $out/bin/cargo-deny"
  echo "$out/bin/cargo-deny"
  exit 0
fi
mkdir -p "$out"
log "building cargo-deny $CARGO_DENY_VERSION into $out (cold: 7-8 minutes on 2 cores)"
start=$SECONDS
# A target dir of its own, kept until the build succeeds: an interrupted build resumes.
target="$cache_root/cargo-target-cargo-deny"
(cd "$here/.." && CARGO_TARGET_DIR="$target" \
  cargo install cargo-deny --version "$CARGO_DENY_VERSION" --locked --root "$out.tmp" >&2)
mv "$out.tmp/bin/cargo-deny" "$out/bin-cargo-deny.tmp"
mkdir -p "$out/bin"
mv "$out/bin-cargo-deny.tmp" "$out/bin/cargo-deny"
rm -rf "$out.tmp" "$target"
log "cargo-deny: done in $((SECONDS - start))s: $("$out/bin/cargo-deny" --version)"
echo "$out/bin/cargo-deny"
