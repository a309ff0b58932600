#!/usr/bin/env bash
# Which Rust Python parser `kopf-audit lint` uses, measured (BENCHMARKS.md, "Choosing the
# Python parser"): builds the bench-only project hack/bench/parsers (not part of the
# workspace) in release mode and runs it, on one core (taskset -c 0), on
#   1. kopf's own source and examples from its PyPI sdist (tests left out: the files lint
#      reads; the same tree as hack/bench-lint.sh, shared in the cache);
#   2. tests/fixtures/kopf (the operators the end-to-end tests run).
# For each of ruff_python_parser, tree-sitter-python and rustpython-parser it prints one
# pass's time (best of 5 rounds of N passes), files/s, MB/s and the files it failed,
# and which Python 3.10-3.14 syntax samples it accepts.
#
#   hack/bench-parsers.sh [--reps N]      (default 20)
#
# The build goes to ${KOPF_AUDIT_CACHE:-~/.cache/kopf-audit}/cargo-target-parsers, the
# kopf sdist is downloaded once into the same cache, keyed on its version.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${KOPF_AUDIT_CACHE:-$HOME/.cache/kopf-audit}
KOPF_VERSION=1.45.2
reps=20
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "[bench-parsers $(date +%H:%M:%S)] $*" >&2; }

sdist=$cache/bench-kopf-sdist-$KOPF_VERSION
if [ ! -d "$sdist/tree" ]; then
  # As hack/bench-lint.sh does, into the same place.
  say "downloading kopf $KOPF_VERSION's sdist into $sdist"
  rm -rf "$sdist.tmp" && mkdir -p "$sdist.tmp"
  python3 -m pip download -q --no-deps --no-binary :all: -d "$sdist.tmp" "kopf==$KOPF_VERSION"
  tar -xzf "$sdist.tmp"/kopf-$KOPF_VERSION.tar.gz -C "$sdist.tmp"
  # The files lint reads: Python outside tests, nothing else.
  (cd "$sdist.tmp/kopf-$KOPF_VERSION" && find . -name '*.py' \
      -not -path '*/tests/*' -not -name 'test_*' -not -name 'conftest.py' -print0 |
    while IFS= read -r -d '' f; do mkdir -p "$sdist.tmp/tree/$(dirname "$f")"; cp "$f" "$sdist.tmp/tree/$f"; done)
  rm -rf "$sdist" && mv "$sdist.tmp" "$sdist"
fi

export CARGO_TARGET_DIR=$cache/cargo-target-parsers
say "building hack/bench/parsers (release; the first build takes a few minutes)"
cargo build -q --release --locked --manifest-path "$repo/hack/bench/parsers/Cargo.toml"
say "measuring, $reps passes per round, one core"
taskset -c 0 "$CARGO_TARGET_DIR/release/bench-parsers" --reps "$reps" \
  "$sdist/tree" "$repo/tests/fixtures/kopf"
say "done"
