#!/usr/bin/env bash
# Builds, once per version, the cosign CLI that signs and verifies hack/release.sh's
# artifacts, and crane, whose registry (`crane registry serve`, in memory, on 127.0.0.1)
# holds the image while cosign signs and attests it: from their Go modules
# github.com/sigstore/cosign/v2/cmd/cosign and github.com/google/go-containerregistry/cmd/crane,
# pinned with a complete go.sum in hack/cosign/ (no download site, only the Go proxy).
#
# The binaries land outside the clone, keyed on the versions, so a fresh clone (CI)
# reuses them:  $KOPF_AUDIT_CACHE/bin-cosign-<ver>-crane-<ver>/{cosign,crane}
# Prints the directory on its last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# The versions hack/cosign/go.mod requires (a test reads both).
COSIGN_VERSION=v2.6.5
CRANE_VERSION=v0.20.7
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-cosign-${COSIGN_VERSION}-crane-${CRANE_VERSION}"

log() { echo "[build-cosign $(date +%H:%M:%S)] $*" >&2; }

if [ -x "$out/cosign" ] && [ -x "$out/crane" ]; then
  log "cached: $out"
  echo "$out"
  exit 0
fi
mkdir -p "$out"
log "building cosign $COSIGN_VERSION and crane $CRANE_VERSION into $out (cold: see BENCHMARKS.md)"

# The sum database is not reachable from these machines: go.sum is committed and
# complete, and is what verifies the modules.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOSUMDB=off GOFLAGS=-mod=mod
export GOCACHE=${GOCACHE:-$cache_root/gocache}

log "downloading modules for cosign $COSIGN_VERSION and crane $CRANE_VERSION"
(cd "$here/cosign" && go mod download)
build() { # name, package, ldflags
  log "$1: go build $2"
  local start=$SECONDS
  (cd "$here/cosign" && go build -trimpath -ldflags "-s -w $3" -o "$out/$1.tmp" "$2")
  mv "$out/$1.tmp" "$out/$1"
  log "$1: done in $((SECONDS - start))s"
}
build cosign github.com/sigstore/cosign/v2/cmd/cosign \
  "-X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION -X sigs.k8s.io/release-utils/version.gitTreeState=clean"
build crane github.com/google/go-containerregistry/cmd/crane \
  "-X github.com/google/go-containerregistry/cmd/crane/cmd.Version=$CRANE_VERSION"
log "cosign: $("$out/cosign" version 2>&1 | sed -n 's/^GitVersion: *//p'), crane: $("$out/crane" version)"
echo "$out"
