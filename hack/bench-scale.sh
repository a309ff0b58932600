#!/usr/bin/env bash
# The auditor at platform scale (BENCHMARKS.md, "Scale: 1,000 audits in a 10,000-pod
# cluster"): builds the scenario on a local cluster of its own (kwok pods, generated
# Events, kopf logs served through kwok Logs objects, real kopf fixtures) and measures
# the auditor's memory, API requests, status writes, Events, the herd after a
# ClusterRole change and restarts. hack/scale/bench.py does the work.
#
#   hack/bench-scale.sh [options]
#     --pods N --deployments N --namespaces N --events N   the noise (default 10000 2000 50 26000)
#     --audits N                 audit targets, one namespace each (default 1000; 3 fixtures are added)
#     --interval D               spec.interval of every KopfAudit (default 5m)
#     --steady S                 steady window, s (default: two intervals)
#     --fast-seconds S           also measure every audit at interval 30s for S s (default 0: skipped)
#     --fixtures A,B,C           real kopf fixtures (default good,silent-failures,no-events-create; "" for none)
#     --auditor PATH             the binary to measure (default: `cargo build --release` of this tree,
#                                target dir $KOPF_AUDIT_CACHE/bench-scale-target, outside the repository)
#     --auditor-args "..."       extra flags for `kopf-audit run` (e.g. --max-concurrent-audits 8)
#     --label NAME               a name for the binary in the results (default: the path)
#     --workdir DIR              results, logs, the cluster (default <repo>/target/bench-scale)
#     --cluster-workdir DIR      the cluster's KOPF_AUDIT_WORKDIR (default WORKDIR/cluster; never <repo>/.e2e)
#     --keep-cluster             leave the cluster running at the end (to re-run with --reuse)
#     --reuse                    keep the scenario when the cluster already holds this scale
#     --setup-only               build the scenario, measure nothing
#     --quick                    a small run: --pods 400 --deployments 80 --namespaces 5 --events 1500
#                                --audits 40 --interval 1m --steady 120
#     --steady-only              stop after the steady window: no herds, no 30s interval, no restarts
#     --cluster-audit            no declared KopfAudit: `run --cluster-audits` and ONE ClusterKopfAudit
#                                (no selector, spec.defaults.interval = --interval) that must generate
#                                a KopfAudit per target and fixture, none for the noise; measures rest,
#                                discovery until all are Ready, and the steady window (no herds,
#                                no restarts) (BENCHMARKS.md, "A ClusterKopfAudit discovering the 1,000")
#
# The cluster is separate from the end-to-end tests' (its own work dir, so its own
# kwokctl cluster directory and ports); the bench stops it at the end unless it was
# already running or --keep-cluster is given. Results: a summary on stdout (one figure
# a line) and WORKDIR/results/scale-<time>.json (and latest.json). Progress on stderr.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
say() { echo "[bench-scale $(date +%H:%M:%S)] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

workdir=$repo/target/bench-scale
cluster_workdir=""
auditor=${KOPF_AUDIT_BENCH_AUDITOR:-}
keep=0
cluster_audit=0
py_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --pods|--deployments|--namespaces|--events|--audits|--interval|--steady|--fast-seconds|--fixtures|--settle|--restart-timeout|--workers|--pod-timeout|--ready-timeout|--mid-wave-after)
      [ $# -ge 2 ] || die "$1 needs a value"; py_args+=("$1" "$2"); shift 2 ;;
    --auditor) auditor=$2; shift 2 ;;
    --auditor-args) py_args+=(--auditor-args "$2"); shift 2 ;;
    --label) py_args+=(--auditor-label "$2"); shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --cluster-workdir) cluster_workdir=$2; shift 2 ;;
    --keep-cluster) keep=1; shift ;;
    --reuse) py_args+=(--reuse); shift ;;
    --setup-only) py_args+=(--setup-only); shift ;;
    --quick) py_args=(--pods 400 --deployments 80 --namespaces 5 --events 1500 --audits 40 --interval 1m
                      --steady 120 "${py_args[@]}"); shift ;;
    --steady-only) py_args+=(--steady-only); shift ;;
    --cluster-audit) py_args+=(--cluster-audit); cluster_audit=1; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
cluster_workdir=${cluster_workdir:-$workdir/cluster}
mkdir -p "$cluster_workdir"
cluster_workdir=$(cd "$cluster_workdir" && pwd)
[ "$cluster_workdir" != "$repo/.e2e" ] || die "refusing the end-to-end tests' cluster ($repo/.e2e): give the bench its own --cluster-workdir"

cluster() { KOPF_AUDIT_WORKDIR=$cluster_workdir bash "$repo/hack/cluster.sh" "$@"; }
started=0
if cluster status >/dev/null 2>&1; then
  say "using the running cluster of $cluster_workdir"
else
  say "starting a cluster in $cluster_workdir"
  started=1
fi
cleanup() {
  if [ "$started" = 1 ] && [ "$keep" = 0 ]; then
    say "stopping the bench's cluster"
    cluster down || true
  elif [ "$started" = 1 ]; then
    say "cluster left running (--keep-cluster): KOPF_AUDIT_WORKDIR=$cluster_workdir hack/cluster.sh down"
  fi
}
trap cleanup EXIT
kubeconfig=$(cluster up | tail -n 1)
kubectl="$cluster_workdir/bin/kubectl --kubeconfig $kubeconfig"

if [ -z "$auditor" ]; then
  target=${KOPF_AUDIT_CACHE:-$HOME/.cache/kopf-audit}/bench-scale-target
  say "building the release binary of this tree into $target (fat LTO: ~10 min cold)"
  bash "$repo/hack/rust-toolchain.sh" >/dev/null
  CARGO_TARGET_DIR=$target cargo build --release --quiet --bin kopf-audit
  auditor=$target/release/kopf-audit
fi
[ -x "$auditor" ] || die "no auditor binary at $auditor"
auditor=$(cd "$(dirname "$auditor")" && pwd)/$(basename "$auditor")
say "auditor: $auditor"
"$auditor" crd | $kubectl apply --server-side --force-conflicts -f - >/dev/null
cluster established kopfaudits.kopfaudit.dev >/dev/null
if [ "$cluster_audit" = 1 ]; then
  "$auditor" crd --kind cluster-kopf-audit | $kubectl apply --server-side --force-conflicts -f - >/dev/null
  cluster established clusterkopfaudits.kopfaudit.dev >/dev/null
fi
bash hack/kopf-venv.sh >/dev/null  # hack/fixture.py runs the fixtures in it

PYTHONDONTWRITEBYTECODE=1 python3 "$repo/hack/scale/bench.py" --kubeconfig "$kubeconfig" --workdir "$workdir" \
  --cluster-dir "$cluster_workdir/kwok/clusters/kopf-audit" --fixture-workdir "$cluster_workdir" --auditor "$auditor" "${py_args[@]}"
