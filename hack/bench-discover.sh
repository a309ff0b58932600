#!/usr/bin/env bash
# The cost of `kopf-audit discover -A` in a 10,000-pod cluster (BENCHMARKS.md,
# "Discovery"): on a tainted kwok node of its own and in namespaces of its own
# (bench-discover-*), 2,000 noise Deployments of 5 replicas (10% with no command, so
# that only their log can decide; a kwok ClusterLogs gives their pods a web server's
# log), 3 kopf Deployments with `kopf run` on their command line and 2 with no command
# whose log is kopf's. Runs the discover binary 3 times under /usr/bin/time -v, checks
# that it finds exactly the 5 operators among the bench's Deployments, prints wall
# time, peak RSS, CPU, requests and bytes listed, and deletes everything it created.
# hack/scale/discover.py does the work.
#
#   hack/bench-discover.sh [options]
#     --kubeconfig PATH     the cluster (default: $KOPF_AUDIT_KUBECONFIG, else
#                           `hack/cluster.sh kubeconfig`); the cluster must be up
#     --auditor PATH        the binary (default: `cargo build --release` of this tree)
#     --deployments N --replicas N --namespaces N --hidden-percent P
#     --kopf-cmd N --kopf-hidden N --runs N   the scenario (default 2000 5 20 10 3 2 3)
#     --workdir DIR         log files and results (default <repo>/target/bench-discover)
#     --keep / --reuse      leave the scenario / measure again on a kept one
#
# On a cluster others use, 10,000 pods slow their pod scheduling while they are
# created and deleted (a few minutes each way on 2 cores): run it on its own cluster
# (`KOPF_AUDIT_WORKDIR=DIR hack/cluster.sh up`), or when nobody else needs the cluster.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
say() { echo "[bench-discover $(date +%H:%M:%S)] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

kubeconfig=${KOPF_AUDIT_KUBECONFIG:-}
auditor=""
workdir=$repo/target/bench-discover
py_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    --auditor) auditor=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --deployments|--replicas|--namespaces|--hidden-percent|--kopf-cmd|--kopf-hidden|--runs|--workers|--pod-timeout)
      [ $# -ge 2 ] || die "$1 needs a value"; py_args+=("$1" "$2"); shift 2 ;;
    --keep|--reuse) py_args+=("$1"); shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
if [ -z "$kubeconfig" ]; then
  kubeconfig=$(bash "$repo/hack/cluster.sh" kubeconfig)
fi
[ -f "$kubeconfig" ] || die "no kubeconfig at $kubeconfig (start the cluster: hack/cluster.sh up)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed for the peak RSS (Debian: apt-get install time)"
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)

if [ -z "$auditor" ]; then
  say "building the release binary of this tree (fat LTO: ~10 min cold)"
  cargo build --release --quiet --bin kopf-audit
  auditor=$repo/target/release/kopf-audit
fi
[ -x "$auditor" ] || die "no auditor binary at $auditor"
auditor=$(cd "$(dirname "$auditor")" && pwd)/$(basename "$auditor")
say "discover binary: $auditor"

PYTHONDONTWRITEBYTECODE=1 python3 "$repo/hack/scale/discover.py" --kubeconfig "$kubeconfig" \
  --auditor "$auditor" --workdir "$workdir" "${py_args[@]}"
