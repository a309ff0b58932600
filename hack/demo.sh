#!/usr/bin/env bash
# The README's main command: a local demo on a fresh machine.
#   starts the local cluster, runs sample kopf operators (one well-behaved, several
#   broken) as real processes, runs kopf-audit, applies one KopfAudit per operator and
#   prints `kubectl get kopfaudits` and every audit's findings.
# Everything is stopped at the end; KOPF_AUDIT_DEMO_KEEP=1 leaves it running to explore
# (then: KOPF_AUDIT_WORKDIR=.demo hack/cluster.sh down).
# The demo's cluster has a work dir of its own (<repo>/.demo, or KOPF_AUDIT_WORKDIR), so
# it runs beside the tests' cluster (<repo>/.e2e) and a bench's, each on its own ports.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export KOPF_AUDIT_WORKDIR=${KOPF_AUDIT_WORKDIR:-$repo/.demo}
step() { echo; echo "=== [demo $(date +%H:%M:%S)] $*"; }
fixtures=(${KOPF_AUDIT_DEMO_FIXTURES:-good bad-resources silent-failures no-events-create annotations-storage crashloop})

step "local cluster (the first run builds the control plane: 25-45 min)"
kubeconfig=$(bash hack/cluster.sh up | tail -n 1)
kubectl="$(dirname "$kubeconfig")/bin/kubectl --kubeconfig $kubeconfig"
bash hack/kopf-venv.sh >/dev/null

step "building kopf-audit"
bash hack/rust-toolchain.sh >/dev/null
cargo build --quiet
bin=target/debug/kopf-audit
workdir=$(dirname "$kubeconfig")
pids=()
cleanup() {
  if [ "${KOPF_AUDIT_DEMO_KEEP:-0}" = 1 ]; then
    echo "left running (KOPF_AUDIT_DEMO_KEEP=1): stop with KOPF_AUDIT_WORKDIR=$KOPF_AUDIT_WORKDIR hack/cluster.sh down"
    return
  fi
  step "stopping the demo"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  bash hack/cluster.sh down >/dev/null || true
}
trap cleanup EXIT

step "installing the KopfAudit CRD"
$bin crd | $kubectl apply --server-side -f - >/dev/null
bash hack/cluster.sh established kopfaudits.kopfaudit.dev >/dev/null

for f in "${fixtures[@]}"; do
  ns="demo-$f"
  step "kopf operator '$f' in namespace $ns"
  $kubectl create namespace "$ns" --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
  fifo="$workdir/demo-$f.out"
  python3 hack/fixture.py run --kubeconfig "$kubeconfig" --fixture "$f" --namespace "$ns" \
    >"$fifo" 2>"$workdir/demo-$f.err" &
  pids+=($!)
  for _ in $(seq 1 120); do
    grep -q '^FIXTURE READY' "$fifo" 2>/dev/null && break
    if grep -q '^FIXTURE FAILED' "$fifo" 2>/dev/null; then cat "$fifo" "$workdir/demo-$f.err"; exit 1; fi
    sleep 1
  done
  grep '^FIXTURE READY' "$fifo" || { echo "fixture $f did not start:"; tail -20 "$workdir/demo-$f.err"; exit 1; }
done

step "starting kopf-audit (log: $workdir/demo-auditor.log)"
KUBECONFIG="$kubeconfig" $bin run --log-format text --http-addr 127.0.0.1:18080 \
  >"$workdir/demo-auditor.log" 2>&1 &
pids+=($!)

step "one KopfAudit per operator"
for f in "${fixtures[@]}"; do
  deployment=$($kubectl -n "demo-$f" get deployments -o jsonpath='{.items[0].metadata.name}')
  cat <<YAML | $kubectl apply -f - >/dev/null
apiVersion: kopfaudit.dev/v1alpha1
kind: KopfAudit
metadata:
  name: $deployment
  namespace: demo-$f
spec:
  target:
    deployment: $deployment
  interval: 30s
YAML
  echo "KopfAudit demo-$f/$deployment"
done

step "waiting for the audits (crash loops take about a minute to show)"
for f in "${fixtures[@]}"; do
  $kubectl -n "demo-$f" wait --for=condition=Ready kopfaudit --all --timeout=120s >/dev/null || true
done
sleep "${KOPF_AUDIT_DEMO_SETTLE:-75}"

step "kubectl get kopfaudits -A"
$kubectl get kopfaudits -A

step "findings (kopf-audit report -A)"
KUBECONFIG="$kubeconfig" $bin report -A

step "metrics excerpt (curl 127.0.0.1:18080/metrics)"
curl -s 127.0.0.1:18080/metrics | grep -E '^kopf_audit_(findings|condition)\{' | grep -E 'Compliant|findings' | head -20 || true
