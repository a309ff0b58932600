#!/usr/bin/env bash
# The auditor's memory at the worst configuration a tenant can give it (BENCHMARKS.md,
# "Memory at the worst configuration"): N KopfAudits at once (default 8, the default
# --max-concurrent-audits), each with logs.limitBytes 64Mi and logs.window 24h, each
# targeting a Deployment of 20 kwok replicas whose current and previous logs are a crash
# loop of 4 KiB ERROR lines with long tracebacks, and each handling a custom resource of
# 50 objects near the API server's size bound. Runs the auditor binary against it, samples
# its VmRSS and VmHWM (/proc/PID/status) over several audit waves and prints them.
# hack/scale/memory.py does the work.
#
#   hack/bench-memory.sh [options]
#     --kubeconfig PATH     the cluster (default: $KOPF_AUDIT_KUBECONFIG, else
#                           `hack/cluster.sh kubeconfig`); the cluster must be up
#     --auditor PATH        the binary to measure (default: `cargo build --release` of this
#                           tree, in its target/)
#     --label NAME          a name for the binary in the results (default: the path)
#     --auditor-args "..."  extra flags for `kopf-audit run`
#     --as-limit-mib N      run the auditor under `prlimit --as` (a binary whose memory
#                           is unbounded then fails instead of taking the machine)
#     --audits N --replicas N --log-mib N --previous-mib N --objects N --object-kib N
#     --waves N --interval D --frames N   the scenario (default 8 20 64 8 50 1400 4 30s 30)
#     --namespace NS        where everything namespaced goes (default bench-mem-worst); the
#                           node is bench-mem-node, tainted so that nothing else runs there
#     --workdir DIR         logs and results (default <repo>/target/bench-memory)
#     --keep / --reuse      leave the scenario / measure again on a kept one
#
# Results: a summary on stdout (one figure a line) and WORKDIR/memory-<time>-<label>.json.
# Progress on stderr. Everything created is deleted at the end unless --keep.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
say() { echo "[bench-memory $(date +%H:%M:%S)] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

kubeconfig=${KOPF_AUDIT_KUBECONFIG:-}
auditor=""
workdir=$repo/target/bench-memory
py_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    --auditor) auditor=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --label|--auditor-args|--as-limit-mib|--audits|--replicas|--log-mib|--previous-mib|--objects|--object-kib|--waves|--interval|--frames|--namespace|--timeout|--append-per-s)
      [ $# -ge 2 ] || die "$1 needs a value"; py_args+=("$1" "$2"); shift 2 ;;
    --keep|--reuse) py_args+=("$1"); shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
if [ -z "$kubeconfig" ]; then
  kubeconfig=$(bash "$repo/hack/cluster.sh" kubeconfig)
fi
[ -f "$kubeconfig" ] || die "no kubeconfig at $kubeconfig (start the cluster: hack/cluster.sh up)"
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)

if [ -z "$auditor" ]; then
  say "building the release binary of this tree (fat LTO: ~10 min cold)"
  cargo build --release --quiet --bin kopf-audit
  auditor=$repo/target/release/kopf-audit
fi
[ -x "$auditor" ] || die "no auditor binary at $auditor"
auditor=$(cd "$(dirname "$auditor")" && pwd)/$(basename "$auditor")
say "auditor: $auditor"

# The cluster's own kubectl (hack/cluster.sh links it beside the kubeconfig), else PATH's.
kubectl=$(dirname "$kubeconfig")/bin/kubectl
[ -x "$kubectl" ] || kubectl=$(command -v kubectl) || die "no kubectl"
if ! "$kubectl" --kubeconfig "$kubeconfig" get crd kopfaudits.kopfaudit.dev >/dev/null 2>&1; then
  say "installing the KopfAudit CRD"
  "$auditor" crd | "$kubectl" --kubeconfig "$kubeconfig" apply --server-side -f - >/dev/null
  sleep 2
fi

PYTHONDONTWRITEBYTECODE=1 python3 "$repo/hack/scale/memory.py" --kubeconfig "$kubeconfig" \
  --auditor "$auditor" --workdir "$workdir" "${py_args[@]}"
