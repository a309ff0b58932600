#!/usr/bin/env bash
# kopf-audit lint's speed (BENCHMARKS.md, "Lint"), measured side by side with ruff on
# the same files in one run, on one core (taskset -c 0):
#   1. a synthetic 10,000-line kopf operator with its rendered chart (hack/bench/
#      lint_operator.py): kopf-audit lint end to end (walk, parse, gather, check, print);
#   2. kopf's own source and examples from its PyPI sdist (the files lint reads: tests
#      left out), under `kopf-audit lint` and under `ruff check --no-cache --isolated`
#      (ruff's default rules), which parse and check the same files.
# Prints the median and min of N runs (default 15) of each, and the ratio.
#
#   hack/bench-lint.sh [--runs N] [--binary PATH]
#
# ruff and the kopf sdist are downloaded once from PyPI into ~/.cache/kopf-audit/,
# keyed on their versions.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${KOPF_AUDIT_CACHE:-$HOME/.cache/kopf-audit}
RUFF_VERSION=0.14.5
KOPF_VERSION=1.45.2
runs=15
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
say() { echo "[bench-lint $(date +%H:%M:%S)] $*" >&2; }

ruff_venv=$cache/bench-ruff-$RUFF_VERSION
if [ ! -x "$ruff_venv/bin/ruff" ]; then
  say "installing ruff $RUFF_VERSION into $ruff_venv"
  python3 -m venv "$ruff_venv.tmp"
  "$ruff_venv.tmp/bin/pip" install -q "ruff==$RUFF_VERSION"
  rm -rf "$ruff_venv" && mv "$ruff_venv.tmp" "$ruff_venv"
  # A venv's scripts name their interpreter by path: rebuild them after the move.
  sed -i "s#$ruff_venv.tmp#$ruff_venv#g" "$ruff_venv"/bin/* 2>/dev/null || true
fi
sdist=$cache/bench-kopf-sdist-$KOPF_VERSION
if [ ! -d "$sdist/tree" ]; then
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
if [ -z "$binary" ]; then
  say "building kopf-audit (release)"
  (cd "$repo" && cargo build -q --release)
  binary=$repo/target/release/kopf-audit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$repo/hack/bench/lint_operator.py" "$work/synthetic" 10000

# Median and min wall time in ms of N runs of a command, on core 0, output discarded.
measure() {
  local times=()
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    taskset -c 0 "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f %.1f\n", a[int((NR+1)/2)]/1000, a[1]/1000}'
}

files=$(find "$sdist/tree" -name '*.py' | wc -l)
lines=$(find "$sdist/tree" -name '*.py' -print0 | xargs -0 cat | wc -l)
say "measuring, $runs runs each, one core"
read -r synth_med synth_min < <(measure "$binary" lint "$work/synthetic" --fail-on never)
read -r lint_med lint_min < <(measure "$binary" lint "$sdist/tree" --fail-on never)
read -r ruff_med ruff_min < <(measure "$ruff_venv/bin/ruff" check --no-cache --isolated --exit-zero "$sdist/tree")
echo "kopf-audit lint, synthetic 10,000-line operator + rendered chart: median ${synth_med} ms, min ${synth_min} ms"
echo "kopf $KOPF_VERSION sdist ($files files, $lines lines of Python, tests left out):"
echo "  kopf-audit lint:                          median ${lint_med} ms, min ${lint_min} ms"
echo "  ruff $RUFF_VERSION check --no-cache --isolated:  median ${ruff_med} ms, min ${ruff_min} ms"
awk -v l="$lint_med" -v r="$ruff_med" 'BEGIN {printf "  lint / ruff (medians): %.2f (at most 2.00 is the target: half ruff'"'"'s speed)\n", l / r}'
