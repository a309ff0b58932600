#!/usr/bin/env bash
# Runs a program under heaptrack's preload library, in place: `exec`s it, so that the
# caller's pid is the program's (hack/bench-scale.sh samples that pid's RSS and sends it
# SIGTERM) while heaptrack's interpreter writes the profile beside it. For the scale
# bench's profile (BENCHMARKS.md, "The profile, and the audits waiting for a slot"):
#
#   HT_BINARY=BIN [HT_OUT=PREFIX] hack/bench-scale.sh --reuse --keep-cluster \
#       --steady-only --steady 120 --auditor hack/scale/heaptrack-exec.sh
#   heaptrack_print -f PREFIX.<pid>.zst --print-peaks 1 --peak-limit 25
#
# Debian: apt-get install -y heaptrack zstd. Build BIN with line tables
# (CARGO_PROFILE_RELEASE_DEBUG=line-tables-only) so that the profile names the code.
set -euo pipefail
preload=/usr/lib/heaptrack/libheaptrack_preload.so
interpret=/usr/lib/heaptrack/libexec/heaptrack_interpret
for f in "$preload" "$interpret"; do
  [ -e "$f" ] || { echo "heaptrack-exec: $f is missing: apt-get install -y heaptrack" >&2; exit 1; }
done
command -v zstd >/dev/null || { echo "heaptrack-exec: zstd is missing: apt-get install -y zstd" >&2; exit 1; }
out=${HT_OUT:-$PWD/heaptrack.auditor}
pipe=$(mktemp -u "${TMPDIR:-/tmp}/heaptrack-pipe.XXXXXX")
mkfifo "$pipe"
("$interpret" < "$pipe" | zstd -q -c > "$out.$$.zst"; rm -f "$pipe") &
LD_PRELOAD=$preload DUMP_HEAPTRACK_OUTPUT=$pipe exec "${HT_BINARY:?HT_BINARY names the program to profile}" "$@"
