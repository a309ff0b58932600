#!/usr/bin/env bash
# Builds, once per version, the control plane the tests and the demo run on:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd from
# k8s.io/kubernetes (hack/k8s/go.mod), kwok and kwokctl from sigs.k8s.io/kwok
# (hack/kwok/go.mod, kept apart because its Kubernetes libraries are older).
#
# The binaries land outside the clone, keyed on versions, so a fresh clone (CI)
# reuses them:  $KOPF_AUDIT_CACHE/bin-k8s-<ver>-kwok-<ver>/
# Prints the cache directory on its last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.37.2
K8S_STAGING_VERSION=v0.37.2
KWOK_VERSION=v0.8.0
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-k8s-${K8S_VERSION}-kwok-${KWOK_VERSION}"

log() { echo "[build-cluster $(date +%H:%M:%S)] $*" >&2; }

binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)
missing=()
for b in "${binaries[@]}"; do [ -x "$out/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then
  log "cached: $out"
  echo "$out"
  exit 0
fi
mkdir -p "$out"
log "building ${missing[*]} into $out (cold: 25-45 minutes on 2 cores)"

# The sum database is not reachable from these machines: go.sum is committed and
# complete, and is what verifies the modules.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOSUMDB=off GOFLAGS=-mod=mod
export GOCACHE=${GOCACHE:-$cache_root/gocache}

version_ldflags() {
  local v=$1 major minor
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  local f=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$f"
}

build_one() { # dir, package, output name, ldflags
  local dir=$1 pkg=$2 name=$3 ldflags=$4
  [ -x "$out/$name" ] && { log "$name: cached"; return; }
  log "$name: go build $pkg"
  local start=$SECONDS
  (cd "$here/$dir" && go build -trimpath -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  log "$name: done in $((SECONDS - start))s"
}

k8s_flags=$(version_ldflags "$K8S_VERSION")
log "downloading modules for k8s.io/kubernetes $K8S_VERSION (staging $K8S_STAGING_VERSION)"
(cd "$here/k8s" && go mod download -x 2>&1 | grep -c '^# get' >/dev/null || true)
build_one k8s k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$k8s_flags"
build_one k8s k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$k8s_flags"
build_one k8s k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler "$k8s_flags"
build_one k8s k8s.io/kubernetes/cmd/kubectl kubectl "$k8s_flags"
build_one k8s go.etcd.io/etcd/server/v3 etcd "-s -w"
kwok_flags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$K8S_VERSION"
build_one kwok sigs.k8s.io/kwok/cmd/kwok kwok "$kwok_flags"
build_one kwok sigs.k8s.io/kwok/cmd/kwokctl kwokctl "$kwok_flags"
log "all binaries in $out"
echo "$out"
