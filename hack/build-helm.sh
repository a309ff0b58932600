#!/usr/bin/env bash
# Builds, once per version, the helm v3 CLI that lints and renders charts/kopf-audit
# (hack/test.sh, tests/e2e/chart.rs): from its Go module helm.sh/helm/v3/cmd/helm,
# pinned with a complete go.sum in hack/helm/ (no download site, only the Go proxy).
#
# The binary lands outside the clone, keyed on the version, so a fresh clone (CI)
# reuses it:  $KOPF_AUDIT_CACHE/bin-helm-<ver>/helm
# Prints the binary's path on its last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
HELM_VERSION=v3.22.0
# The Kubernetes version helm reports in .Capabilities when it renders without a
# cluster (helm template): the minor of its client-go (v0.37) plus the major 1,
# as helm's own Makefile derives it.
K8S_MAJOR=1
K8S_MINOR=37
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-helm-${HELM_VERSION}"

log() { echo "[build-helm $(date +%H:%M:%S)] $*" >&2; }

if [ -x "$out/helm" ]; then
  log "cached: $out/helm"
  echo "$out/helm"
  exit 0
fi
mkdir -p "$out"
log "building helm $HELM_VERSION into $out (cold: 4-8 minutes on 2 cores)"

# The sum database is not reachable from these machines: go.sum is committed and
# complete, and is what verifies the modules.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOSUMDB=off GOFLAGS=-mod=mod
export GOCACHE=${GOCACHE:-$cache_root/gocache}

ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=$K8S_MAJOR -X $pkg.k8sVersionMinor=$K8S_MINOR"
done

log "downloading modules for helm.sh/helm/v3 $HELM_VERSION"
(cd "$here/helm" && go mod download)
log "helm: go build helm.sh/helm/v3/cmd/helm"
start=$SECONDS
(cd "$here/helm" && go build -trimpath -ldflags "$ldflags" -o "$out/helm.tmp" helm.sh/helm/v3/cmd/helm)
mv "$out/helm.tmp" "$out/helm"
log "helm: done in $((SECONDS - start))s: $("$out/helm" version --short)"
echo "$out/helm"
