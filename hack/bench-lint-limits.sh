#!/usr/bin/env bash
# kopf-audit lint on hostile repositories (BENCHMARKS.md, "Lint", "The bounds,
# measured"): each case a repository at or just over one of lint's bounds
# (src/gather/files/bounds.rs), written by hack/bench/lint_hostile.py into a temporary
# directory, as tests/hostile_lint.rs builds them: Python and YAML nested 100,000 deep,
# files at and over the size bounds, trees at and over the bounds of a run.
# Each case runs N times (default 3) as
#   kopf-audit lint DIR -o json --fail-on none
# under /usr/bin/time; one table row per case: its input, the exit code, the median
# wall time, the largest peak RSS, and whether the acceptance holds (no crash, under
# 10 s, under 512 MiB). Needs no helm and no cluster: no case holds a chart.
#
#   hack/bench-lint-limits.sh [--runs N] [--binary PATH] [CASE...]
#
# A run longer than 60 s is stopped (exit 124, its time and RSS so far shown).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=3
binary=""
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
say() { echo "[bench-lint-limits $(date +%H:%M:%S)] $*" >&2; }
MAX_SECONDS=10
MAX_MIB=512
KILL_AFTER=60

[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
if [ -z "$binary" ]; then
  say "building kopf-audit (release)"
  (cd "$repo" && cargo build -q --release --bin kopf-audit)
  binary=${CARGO_TARGET_DIR:-$repo/target}/release/kopf-audit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "writing the hostile repositories into $work"
python3 "$repo/hack/bench/lint_hostile.py" "$work/cases" "${cases[@]}" >"$work/cases.tsv"

# One run of lint on a directory: "exit seconds kib" on stdout. Exit 124: stopped
# after KILL_AFTER s (SIGTERM, then SIGKILL 5 s later); over 128: a signal (a crash).
run_once() {
  local dir=$1 timing=$work/time.out rc=0
  # time outside timeout (which survives its TERM and reaps lint): a stopped run still
  # reports its peak RSS.
  /usr/bin/time -f '%e %M' -o "$timing" timeout -k 5 "$KILL_AFTER" \
    "$binary" lint "$dir" -o json --fail-on none </dev/null >"$work/stdout" 2>"$work/stderr" || rc=$?
  # GNU time writes "Command terminated by signal N" / "exited with non-zero status"
  # lines before the format's line: the last line is the timing. The file is removed
  # before the figures are printed: the caller reads them from a process substitution
  # and starts the next run at once, whose timing file a later rm would remove.
  local figures=""
  [ -s "$timing" ] && figures=$(tail -n 1 "$timing")
  rm -f "$timing"
  if [ -n "$figures" ]; then
    echo "$rc $figures"
  else
    echo "$rc $KILL_AFTER 0"  # time itself was killed: no figures
  fi
}

mib() { awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%.1f MiB", b / 1048576; else if (b >= 1024) printf "%.1f KiB", b / 1024; else printf "%d B", b }'; }

printf '| case | input | files | exit | unread | median wall | peak RSS | holds |\n'
printf '|---|---|---|---|---|---|---|---|\n'
while IFS=$'\t' read -r name dir bytes files what; do
  say "$name: $what, $runs runs"
  codes=() times=() peak=0
  for _ in $(seq "$runs"); do
    read -r rc secs kib < <(run_once "$dir")
    codes+=("$rc")
    times+=("$secs")
    [ "$kib" -gt "$peak" ] && peak=$kib
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  exits=$(printf '%s\n' "${codes[@]}" | sort -u | paste -sd/ -)
  # How many inputs the last run named unread (its JSON's `unread` list).
  unread=$(python3 -c 'import json,sys
try: print(len(json.load(open(sys.argv[1])).get("unread", [])))
except Exception: print("-")' "$work/stdout")
  peak_mib=$(awk -v k="$peak" 'BEGIN {printf "%.1f", k / 1024}')
  broken=()
  for rc in "${codes[@]}"; do
    case "$rc" in 0|1|2) ;; 124) broken+=("stopped") ;; *) broken+=("exit $rc") ;; esac
  done
  for t in "${times[@]}"; do
    awk -v t="$t" -v m="$MAX_SECONDS" 'BEGIN {exit !(t > m)}' && broken+=("${t} s")
  done
  awk -v k="$peak" -v m="$MAX_MIB" 'BEGIN {exit !(k > m * 1024)}' && broken+=("${peak_mib} MiB")
  holds=yes
  [ ${#broken[@]} -eq 0 ] || holds="NO ($(printf '%s\n' "${broken[@]}" | sort -u | paste -sd, - | sed 's/,/, /g'))"
  if [ "$holds" != yes ]; then
    say "$name: $holds; stderr: $(head -c 300 "$work/stderr")"
  fi
  printf '| `%s`: %s | %s | %s | %s | %s | %s s | %s MiB | %s |\n' \
    "$name" "$what" "$(mib "$bytes")" "$files" "$exits" "$unread" "$median" "$peak_mib" "$holds"
  rm -rf "$dir"
done <"$work/cases.tsv"
say "done: acceptance is no crash, under $MAX_SECONDS s and under $MAX_MIB MiB in every run"
