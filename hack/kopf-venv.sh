#!/usr/bin/env bash
# Usage: hack/kopf-venv.sh [VERSION]
# Creates, once, the Python venv with a pinned kopf, cached outside the clone at
#   ${KOPF_AUDIT_CACHE:-$HOME/.cache/kopf-audit}/venv-kopf-VERSION
# and keyed on the sha256 of its requirements file (stored in the venv; a changed
# file rebuilds it). Without VERSION: kopf 1.45.2, the one the fixtures run
# (hack/requirements-kopf.txt); with one: hack/requirements-kopf-VERSION.txt (older
# kopfs, for the log parser's captured test data). Concurrent callers wait on a lock.
# Progress goes to stderr; the venv path is the last line of stdout.
# Needs python3 (>= 3.10, or KOPF_AUDIT_PYTHON) with venv and pip, and PyPI.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
DEFAULT_VERSION=1.45.2
KOPF_VERSION=${1:-$DEFAULT_VERSION}
if [ "$KOPF_VERSION" = "$DEFAULT_VERSION" ]; then
  req="$here/requirements-kopf.txt"
else
  req="$here/requirements-kopf-$KOPF_VERSION.txt"
fi
if [ ! -f "$req" ]; then
  echo "[kopf-venv] ERROR: no $req; pinned versions: $DEFAULT_VERSION $(cd "$here" && ls requirements-kopf-*.txt 2>/dev/null | sed -E 's/requirements-kopf-(.*)\.txt/\1/' | tr '\n' ' ')" >&2
  exit 1
fi
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
venv="$cache_root/venv-kopf-$KOPF_VERSION"
python=${KOPF_AUDIT_PYTHON:-python3}
want=$(sha256sum "$req" | cut -d' ' -f1)

log() { echo "[kopf-venv $(date +%H:%M:%S)] $*" >&2; }
cached() {
  [ "$(cat "$venv/.requirements-sha256" 2>/dev/null)" = "$want" ] \
    && "$venv/bin/python" -c 'import kopf, yaml' 2>/dev/null
}

if cached; then log "cached: $venv"; echo "$venv"; exit 0; fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.venv-kopf.lock"
flock 9
if cached; then log "cached: $venv"; echo "$venv"; exit 0; fi

command -v "$python" >/dev/null || { log "ERROR: $python not found (set KOPF_AUDIT_PYTHON)"; exit 1; }
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
  || { log "ERROR: $("$python" --version 2>&1) is older than 3.10; kopf $KOPF_VERSION needs 3.10+"; exit 1; }

rm -rf "$venv"
log "creating $venv with $("$python" --version 2>&1), installing $req"
"$python" -m venv "$venv" >&2
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" >&2; then
  log "ERROR: pip install -r $req failed (is PyPI reachable?)"; rm -rf "$venv"; exit 1
fi
if ! "$venv/bin/python" -c 'import kopf, yaml; from importlib.metadata import version as v; assert v("kopf") == "'"$KOPF_VERSION"'", v("kopf")' >&2; then
  log "ERROR: kopf $KOPF_VERSION not importable in $venv"; rm -rf "$venv"; exit 1
fi
echo "$want" >"$venv/.requirements-sha256"
log "ready: $venv (kopf $KOPF_VERSION)"
echo "$venv"
