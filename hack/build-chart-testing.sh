#!/usr/bin/env bash
# Builds, once per version, chart-testing's `ct` (the Helm community's chart linter) from
# its Go module github.com/helm/chart-testing/v3/ct, pinned with a complete go.sum in
# hack/chart-testing/, and the two Python tools `ct lint` runs, yamllint and yamale
# (the versions chart-testing's own image installs), in a venv beside it. chart-testing's
# default chart_schema.yaml and lintconf.yaml are copied from the module next to `ct`.
#
# Everything lands outside the clone, keyed on the versions, so a fresh clone (CI)
# reuses it:  $KOPF_AUDIT_CACHE/bin-chart-testing-<ver>/{ct,venv/,etc/}
# Prints that directory on its last line of stdout (put it and its venv/bin on PATH).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
CT_VERSION=v3.14.0
YAMLLINT_VERSION=1.38.0
YAMALE_VERSION=6.0.0
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-chart-testing-${CT_VERSION}-yamllint-${YAMLLINT_VERSION}-yamale-${YAMALE_VERSION}"

log() { echo "[build-chart-testing $(date +%H:%M:%S)] $*" >&2; }

if [ -x "$out/ct" ] && [ -x "$out/venv/bin/yamale" ] && [ -x "$out/venv/bin/yamllint" ] \
    && [ -f "$out/etc/chart_schema.yaml" ] && [ -f "$out/etc/lintconf.yaml" ]; then
  log "cached: $out"
  echo "$out"
  exit 0
fi
mkdir -p "$out/etc"
log "building chart-testing $CT_VERSION into $out (cold: 2-4 minutes on 2 cores)"

# The sum database is not reachable from these machines: go.sum is committed and
# complete, and is what verifies the modules.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOSUMDB=off GOFLAGS=-mod=mod
export GOCACHE=${GOCACHE:-$cache_root/gocache}

log "downloading modules for github.com/helm/chart-testing/v3 $CT_VERSION"
(cd "$here/chart-testing" && go mod download github.com/helm/chart-testing/v3)
start=$SECONDS
ldflags="-s -w -X github.com/helm/chart-testing/v3/ct/cmd.Version=$CT_VERSION"
(cd "$here/chart-testing" && go build -trimpath -ldflags "$ldflags" -o "$out/ct.tmp" github.com/helm/chart-testing/v3/ct)
module_dir=$(cd "$here/chart-testing" && go list -m -f '{{.Dir}}' github.com/helm/chart-testing/v3)
cp "$module_dir/etc/chart_schema.yaml" "$module_dir/etc/lintconf.yaml" "$out/etc/"
log "ct: built in $((SECONDS - start))s"

log "yamllint $YAMLLINT_VERSION and yamale $YAMALE_VERSION into $out/venv (PyPI)"
rm -rf "$out/venv"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --quiet --disable-pip-version-check \
  "yamllint==$YAMLLINT_VERSION" "yamale==$YAMALE_VERSION"
mv "$out/ct.tmp" "$out/ct"
log "done: $("$out/ct" version 2>/dev/null | head -n 1)"
echo "$out"
