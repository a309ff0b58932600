#!/usr/bin/env bash
# Peak memory of discovery over a tenant's namespace of fat Deployments (BENCHMARKS.md,
# "Discovery", "A namespace of fat Deployments"): COUNT Deployments (default 130) with
# replicas 0, each with one environment value of SIZE bytes (default 1,400,000, under
# etcd's 1.5 MiB request limit), two of them kopf operators, in a namespace of their
# own on the running local cluster. Each binary given runs `discover -n NS -o json`
# RUNS times (default 3) under /usr/bin/time; the script prints wall time, peak RSS and
# what it found, then deletes the namespace.
#
#   hack/bench-fat-deployments.sh [--count N] [--size BYTES] [--runs N] BINARY...
#
# The cluster must be up (hack/cluster.sh up); KOPF_AUDIT_KUBECONFIG or the cluster's
# own kubeconfig is used.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "[bench-fat $(date +%H:%M:%S)] $*" >&2; }
count=130
size=1400000
runs=3
binaries=()
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) binaries+=("$1"); shift ;;
  esac
done
[ ${#binaries[@]} -gt 0 ] || { echo "usage: $0 [--count N] [--size BYTES] [--runs N] BINARY..." >&2; exit 2; }
kubeconfig=${KOPF_AUDIT_KUBECONFIG:-$(bash "$repo/hack/cluster.sh" kubeconfig | tail -n 1)}
workdir=${KOPF_AUDIT_WORKDIR:-$repo/.e2e}
kubectl=("$workdir/bin/kubectl" --kubeconfig "$kubeconfig")
ns=bench-fat-$$
tmp=$(mktemp -d)
cleanup() {
  "${kubectl[@]}" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

say "creating namespace $ns with $count Deployments of $size bytes of environment each"
"${kubectl[@]}" create namespace "$ns" >/dev/null
python3 - "$ns" "$count" "$size" "$tmp" <<'EOF'
import json, sys
ns, count, size, tmp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
for i in range(count):
    name = f"fat-{i:03d}"
    command = ["kopf", "run", "-n", ns, "op.py"] if i < 2 else ["/app/server"]
    d = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "main", "image": "tenant/app:1", "command": command,
                    "env": [{"name": "BLOB", "value": "x" * size}],
                }]},
            },
        },
    }
    with open(f"{tmp}/{name}.json", "w") as f:
        json.dump(d, f)
EOF
for f in "$tmp"/fat-*.json; do "${kubectl[@]}" create -f "$f" >/dev/null; done
say "created"

printf '%-60s %-5s %10s %14s %s\n' binary run wall_s peak_rss_mib found
for binary in "${binaries[@]}"; do
  for run in $(seq 1 "$runs"); do
    /usr/bin/time -f '%e %M' -o "$tmp/time" \
      "$binary" --kubeconfig "$kubeconfig" discover -n "$ns" -o json >"$tmp/out.json" 2>"$tmp/err" || true
    read -r wall rss <"$tmp/time"
    found=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d.get("operators", d.get("found", []))))' "$tmp/out.json" 2>/dev/null || echo "?")
    printf '%-60s %-5s %10s %14s %s\n' "$binary" "$run" "$wall" "$(( rss / 1024 ))" "$found"
  done
done
