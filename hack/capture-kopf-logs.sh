#!/usr/bin/env bash
# Captures real kopf output from the fixtures, in kopf's three log formats, as test data
# for the log parser (crates/kopf-log/tests/data/captured/). Needs the local cluster
# (hack/cluster.sh up). Each fixture runs for $SECONDS_PER_RUN (default 75 s: kopf
# retries a 403 for ~54 s before it logs the outcome).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
kubeconfig=$(bash hack/cluster.sh kubeconfig)
kubectl="$(dirname "$kubeconfig")/bin/kubectl --kubeconfig $kubeconfig"
out=crates/kopf-log/tests/data/captured
mkdir -p "$out"
runs=(silent-failures:full silent-failures:json silent-failures:plain
      no-events-create:full no-events-create:json no-events-create:plain
      pruning-status:full pruning-status:plain no-crd-list:full no-crd-list:json
      crashloop:full crashloop:json logging-flood:full cluster-scoped-posted:full)
stamp=$(date +%s)
pids=()
for run in "${runs[@]}"; do
  fixture=${run%%:*}; format=${run##*:}
  ns="cap-$fixture-$format-$stamp"
  $kubectl create namespace "$ns" >/dev/null
  python3 hack/fixture.py run --kubeconfig "$kubeconfig" --fixture "$fixture" --namespace "$ns" \
    --log-format "$format" >"/tmp/capture-$ns.out" 2>/dev/null &
  pids+=($!)
done
sleep "${SECONDS_PER_RUN:-75}"
for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
wait || true
for run in "${runs[@]}"; do
  fixture=${run%%:*}; format=${run##*:}
  ns="cap-$fixture-$format-$stamp"
  grep -q '^FIXTURE READY' "/tmp/capture-$ns.out" || { echo "fixture $fixture ($format) did not start" >&2; exit 1; }
  dir=$(ls -d "$(dirname "$kubeconfig")/pod-logs/$ns"/*/operator | head -n 1)
  # The API's view with timestamps=true: "<RFC3339Nano> <line>" (the CRI stream tag dropped).
  for f in "$dir"/*.log; do
    n=$(basename "$f" .log)
    suffix=$([ "$n" = 0 ] && echo "" || echo ".restart$n")
    sed -E 's/^([^ ]+) (stdout|stderr) [FP] /\1 /' "$f" | head -c 100000 >"$out/$fixture.$format$suffix.log"
  done
  $kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  echo "captured $fixture ($format)"
done
