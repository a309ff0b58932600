#!/usr/bin/env bash
# Measures the running operator: resting memory (RSS) with kopf fixtures audited, API
# requests per audit, and status writes in a steady state (should be zero).
# Method: release build, local cluster, FIXTURES kopf operators, one KopfAudit each at
# a 30s interval; after a warm-up of WARMUP seconds, counters are read from /metrics
# twice, STEADY seconds apart, and RSS from /proc. Prints the figures for BENCHMARKS.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
fixtures=(${FIXTURES:-good bad-resources silent-failures no-events-create annotations-storage})
warmup=${WARMUP:-75}
steady=${STEADY:-95}
say() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }

kubeconfig=$(bash hack/cluster.sh up | tail -n 1)
kubectl="$(dirname "$kubeconfig")/bin/kubectl --kubeconfig $kubeconfig"
bash hack/kopf-venv.sh >/dev/null
say "building the release binary"
bash hack/rust-toolchain.sh >/dev/null
cargo build --release --quiet --bin kopf-audit
bin=target/release/kopf-audit
stamp=$(date +%s)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for f in "${fixtures[@]}"; do $kubectl delete namespace "bench-$f-$stamp" --wait=false >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
$bin crd | $kubectl apply --server-side -f - >/dev/null
for f in "${fixtures[@]}"; do
  ns="bench-$f-$stamp"
  $kubectl create namespace "$ns" >/dev/null
  python3 hack/fixture.py run --kubeconfig "$kubeconfig" --fixture "$f" --namespace "$ns" >"/tmp/$ns.out" 2>/dev/null &
  pids+=($!)
done
for f in "${fixtures[@]}"; do
  for _ in $(seq 1 60); do grep -q '^FIXTURE READY' "/tmp/bench-$f-$stamp.out" && break; sleep 1; done
done
port=18181
KUBECONFIG="$kubeconfig" $bin run --log-format json --log-level warn --http-addr "127.0.0.1:$port" 2>/dev/null &
auditor=$!
pids+=($auditor)
for f in "${fixtures[@]}"; do
  ns="bench-$f-$stamp"
  d=$($kubectl -n "$ns" get deployments -o jsonpath='{.items[0].metadata.name}')
  printf 'apiVersion: kopfaudit.dev/v1alpha1\nkind: KopfAudit\nmetadata: {name: %s, namespace: %s}\nspec: {target: {deployment: %s}, interval: 30s}\n' "$d" "$ns" "$d" \
    | $kubectl apply -f - >/dev/null
done
say "${#fixtures[@]} audits applied; warming up ${warmup}s"
sleep "$warmup"
metric() { curl -s "127.0.0.1:$port/metrics" | awk -v m="$1" '$1 ~ "^"m {split($0,a," "); s+=a[length(a)]} END {printf "%d", s}'; }
requests() { curl -s "127.0.0.1:$port/metrics" | grep '^kopf_audit_api_requests_total' | grep 'watch="false"' | awk '{s+=$NF} END {printf "%d", s}'; }
a1=$(metric kopf_audit_audits_total); r1=$(requests); w1=$(metric kopf_audit_status_writes_total)
say "steady state for ${steady}s"
sleep "$steady"
a2=$(metric kopf_audit_audits_total); r2=$(requests); w2=$(metric kopf_audit_status_writes_total)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$auditor/status"); hwm=$(awk '/VmHWM/ {print $2}' "/proc/$auditor/status")
audits=$((a2 - a1))
echo "fixtures audited:               ${#fixtures[@]}"
echo "RSS now / peak (KiB):           $rss / $hwm"
echo "audits in the steady window:    $audits"
echo "API requests (not watches):     $((r2 - r1))"
if [ "$audits" -gt 0 ]; then
  echo "API requests per audit:         $(awk -v r=$((r2 - r1)) -v a=$audits 'BEGIN {printf "%.1f", r/a}')"
fi
echo "status writes in the window:    $((w2 - w1))"
echo "watches opened so far:          $(curl -s "127.0.0.1:$port/metrics" | grep '^kopf_audit_api_requests_total' | grep 'watch="true"' | awk '{s+=$NF} END {print s+0}')"
