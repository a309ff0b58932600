#!/usr/bin/env bash
# Builds, once per version, kube-state-metrics from its Go module
# k8s.io/kube-state-metrics/v2 (pinned with a complete go.sum in
# hack/kube-state-metrics/; no download site, only the Go proxy), to test the chart's
# CustomResourceStateMetrics config for KopfAudits against the local cluster
# (tests/e2e/prometheus.rs).
#
# The binary lands outside the clone, keyed on the version, so a fresh clone (CI)
# reuses it:  $KOPF_AUDIT_CACHE/bin-kube-state-metrics-<ver>/kube-state-metrics
# Prints the binary's path on its last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
KSM_VERSION=v2.16.0
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-kube-state-metrics-${KSM_VERSION}"

log() { echo "[build-kube-state-metrics $(date +%H:%M:%S)] $*" >&2; }

if [ -x "$out/kube-state-metrics" ]; then
  log "cached: $out/kube-state-metrics"
  echo "$out/kube-state-metrics"
  exit 0
fi
mkdir -p "$out"
log "building kube-state-metrics $KSM_VERSION into $out (cold: a few minutes on 2 cores)"

# The sum database is not reachable from these machines: go.sum is committed and
# complete, and is what verifies the modules.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOSUMDB=off GOFLAGS=-mod=mod
export GOCACHE=${GOCACHE:-$cache_root/gocache}

ldflags="-s -w -X github.com/prometheus/common/version.Version=${KSM_VERSION#v}"
ldflags+=" -X github.com/prometheus/common/version.Branch=release-${KSM_VERSION%.*}"

log "downloading modules for k8s.io/kube-state-metrics/v2 $KSM_VERSION"
(cd "$here/kube-state-metrics" && go mod download)
log "kube-state-metrics: go build k8s.io/kube-state-metrics/v2"
start=$SECONDS
(cd "$here/kube-state-metrics" && go build -trimpath -ldflags "$ldflags" -o "$out/kube-state-metrics.tmp" k8s.io/kube-state-metrics/v2)
mv "$out/kube-state-metrics.tmp" "$out/kube-state-metrics"
log "kube-state-metrics: done in $((SECONDS - start))s: $("$out/kube-state-metrics" version 2>&1 | head -n 1)"
echo "$out/kube-state-metrics"
