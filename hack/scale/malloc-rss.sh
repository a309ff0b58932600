#!/usr/bin/env bash
# The auditor's RSS under glibc malloc settings, on a cluster the scale bench left
# running (hack/bench-scale.sh --keep-cluster): for each variant (environment
# assignments, "" for none), starts `kopf-audit run`, waits for /readyz, samples VmRSS
# every 10 s for SECONDS, prints the samples, VmHWM and the audits run, and stops it.
#
#   hack/scale/malloc-rss.sh BINARY KUBECONFIG SECONDS VARIANT...
#   e.g. hack/scale/malloc-rss.sh target/release/kopf-audit \
#          target/bench-scale/cluster/kubeconfig 240 "" "MALLOC_ARENA_MAX=2"
#
# The binary's own malloc settings (src/main.rs) step aside when any of MALLOC_ARENA_MAX,
# MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES is set; the variant "GLIBC_TUNABLES=" measures
# glibc's defaults with a binary that has them.
set -euo pipefail
binary=$1 kubeconfig=$2 seconds=$3
shift 3
port=18081
for variant in "$@"; do
  # shellcheck disable=SC2086 # a variant is a list of assignments
  env $variant KUBECONFIG="$kubeconfig" "$binary" run --log-level warn \
    --http-addr "127.0.0.1:$port" >/dev/null 2>&1 &
  pid=$!
  start=$(date +%s)
  until curl -sf "127.0.0.1:$port/readyz" >/dev/null; do sleep 0.5; done
  ready=$(($(date +%s) - start))
  samples=""
  for _ in $(seq 1 $((seconds / 10))); do
    sleep 10
    samples="$samples $(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")"
  done
  hwm=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status")
  audits=$(curl -s "127.0.0.1:$port/metrics" | awk '/^kopf_audit_audits_total/ {s += $2} END {print s + 0}')
  echo "[${variant:-glibc defaults}] ready after ${ready} s, ${audits} audits; RSS MiB every 10 s:${samples}; VmHWM ${hwm} MiB"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
done
