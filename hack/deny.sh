#!/usr/bin/env bash
# `cargo deny check` as CI runs it (hack/test.sh): the licenses, bans and sources of
# both Cargo workspaces (the root one, with crates/kopf-log, and hack/argocd) against
# deny.toml, always; security advisories too, when the RustSec advisory database is here.
#
# cargo-deny reads advisories from a git clone of github.com/RustSec/advisory-db in
# $CARGO_HOME/advisory-dbs (deny.toml's db-path), which only `cargo deny fetch db` makes:
# no package registry serves it. This script tries that fetch (it fails within a second
# where GitHub's name does not resolve, and is cut off after FETCH_TIMEOUT where it
# hangs), uses whatever clone is there, and, with none, says plainly that advisories
# were NOT checked and why. It never passes off a skipped advisories check as a passed
# one. KOPF_AUDIT_REQUIRE_ADVISORIES=1 makes a missing database fail the script.
#
# cargo-deny is built once by hack/build-cargo-deny.sh (cached outside the clone).
# Exit status: non-zero when a check fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
config="$repo/deny.toml"
manifests=("$repo/Cargo.toml" "$repo/hack/argocd/Cargo.toml")
FETCH_TIMEOUT=120
db_root="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs"

log() { echo "[deny $(date +%H:%M:%S)] $*" >&2; }

bash "$here/rust-toolchain.sh" >/dev/null
deny=$(bash "$here/build-cargo-deny.sh" | tail -n 1)
log "$("$deny" --version), rules: deny.toml"

# The graphs are read offline below (--offline also keeps cargo-deny from fetching
# anything): their crates come from crates.io first.
for manifest in "${manifests[@]}"; do
  cargo fetch --locked --quiet --manifest-path "$manifest"
done

log "fetching the RustSec advisory database into $db_root (git, from GitHub)"
if fetch_output=$(cd "$repo" && timeout "$FETCH_TIMEOUT" "$deny" --color never --config "$config" fetch db 2>&1); then
  fetch_error=""
else
  fetch_error=$(echo "$fetch_output" | grep -E 'fatal:|error|ERROR' | tail -n 1)
  fetch_error=${fetch_error:-"no answer within ${FETCH_TIMEOUT}s"}
fi
db=$(find "$db_root" -mindepth 1 -maxdepth 1 -type d -name 'advisory-db-*' 2>/dev/null | head -n 1)
if [ -n "$db" ] && ! git -C "$db" rev-parse --verify --quiet HEAD >/dev/null; then
  db=""
fi

checks=(bans licenses sources)
if [ -n "$db" ]; then
  checks=(advisories "${checks[@]}")
  db_state="$(git -C "$db" log -1 --format='%cs, commit %h') in $db"
  if [ -n "$fetch_error" ]; then
    log "fetch failed ($fetch_error): checking against the clone already here, of $db_state"
  else
    log "advisory database: $db_state"
  fi
fi

failed=0
for manifest in "${manifests[@]}"; do
  log "cargo deny check ${checks[*]}: ${manifest#"$repo"/}"
  "$deny" --offline --color never --manifest-path "$manifest" --config "$config" \
    check --hide-inclusion-graph "${checks[@]}" || failed=1
done

if [ -z "$db" ]; then
  cat >&2 <<EOF

=== ADVISORIES NOT CHECKED ===========================================================
cargo deny checked licenses, bans and sources, but NOT security advisories: there is no
RustSec advisory database in $db_root, and fetching one failed:
  $fetch_error
cargo-deny gets the database only with git, from https://github.com/RustSec/advisory-db.
Run hack/deny.sh where GitHub is reachable (it fetches, then checks), or put a clone of
that repository in $db_root (\`cargo deny fetch db\` names the directory it expects).
======================================================================================
EOF
  if [ "${KOPF_AUDIT_REQUIRE_ADVISORIES:-0}" = 1 ]; then
    log "KOPF_AUDIT_REQUIRE_ADVISORIES=1: failing"
    failed=1
  fi
fi

if [ "$failed" != 0 ]; then
  log "FAILED: see cargo-deny's errors above"
  exit 1
fi
log "passed: ${checks[*]}$([ -n "$db" ] || echo ' (advisories NOT checked, see above)')"
