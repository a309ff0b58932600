#!/usr/bin/env bash
# The log scan's CPU time against grep's, robust to a noisy shared machine: the
# minimum `perf stat` task-clock over RUNS interleaved single runs of the scan
# benchmark's `Routine::Count` profile and of `grep -c -E` with the same
# alternation, on the same file (see BENCHMARKS.md). A second binary (BASELINE,
# e.g. a build of an older commit) is interleaved too when given.
#
#   bash hack/bench-scan-cpu.sh [FILE]      (default: the benchmark's 100 MB file)
#   RUNS=21 BASELINE=/path/to/old/scan-binary bash hack/bench-scan-cpu.sh
#
# Needs perf (linux-perf) and a built benchmark (cargo bench -p kopf-log --bench
# scan --no-run; the first `cargo bench` run generates the file).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
file=${1:-target/tmp/kopf-bench-100mb-v2.log}
runs=${RUNS:-15}
say() { echo "[bench-scan-cpu $(date +%H:%M:%S)] $*" >&2; }
command -v perf >/dev/null || { say "perf is not installed"; exit 1; }
[[ -f $file ]] || { say "no $file: run 'cargo bench -p kopf-log --bench scan' once"; exit 1; }
say "building the benchmark (release profile)"
bin=$(cargo bench -p kopf-log --bench scan --no-run --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*scan-[^"]*\)".*/\1/p' | tail -n 1)
[[ -x $bin ]] || { say "benchmark binary not found"; exit 1; }
# The alternation, exactly as the benchmark passes it to grep.
pattern=$(sed -n '/^const GREP_PATTERN/,/^);/p' crates/kopf-log/benches/scan.rs \
  | grep -o '"[^"]*"' | tr -d '"\n' | sed 's/\\\\/\\/g')
mb=$(( $(stat -c %s "$file") / 1000000 ))
scan() { # binary -> task-clock ms of one Count run
  KOPF_BENCH_MB=$mb KOPF_BENCH_RUNS=1 KOPF_BENCH_PROFILE=count KOPF_BENCH_FILE=$file \
    perf stat -x, -e task-clock "$1" --bench 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
}
grep_once() { # -> task-clock ms of one grep (its output to a file: grep stops early on /dev/null)
  LC_ALL=C perf stat -x, -e task-clock -o "$tmp/stat" grep -c -E "$pattern" "$file" > "$tmp/out" || true
  awk -F, '/task-clock/ {print $1}' "$tmp/stat"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "$runs interleaved runs on $file ($mb MB)"
for _ in $(seq "$runs"); do
  scan "$bin" >> "$tmp/new"
  [[ -n ${BASELINE:-} ]] && scan "$BASELINE" >> "$tmp/old"
  grep_once >> "$tmp/grep"
done
min() { sort -n "$1" | head -n 1; }
new=$(min "$tmp/new"); g=$(min "$tmp/grep")
echo "Routine::Count: min $new ms CPU; grep: min $g ms; ratio (grep CPU / scan CPU) $(awk -v a="$g" -v b="$new" 'BEGIN {printf "%.3f", a / b}')x"
if [[ -n ${BASELINE:-} ]]; then
  old=$(min "$tmp/old")
  echo "baseline: min $old ms CPU; ratio $(awk -v a="$g" -v b="$old" 'BEGIN {printf "%.3f", a / b}')x"
fi
