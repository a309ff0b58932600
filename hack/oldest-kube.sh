#!/usr/bin/env bash
# Applies the CRD and the chart to the oldest Kubernetes release the chart's
# `kubeVersion` admits (charts/kopf-audit/Chart.yaml), so that the claim is tested and
# not only written down. hack/test.sh runs it; it fails on the first check that fails.
#
# Why 1.29 is the minimum (checked against the k8s.io/apiserver sources of each release,
# pkg/cel/environment/base.go):
# - The CRD's CEL rules call isQuantity()/quantity(). The quantity library entered the
#   base environment with IntroducedVersion 1.28, but an API server compiles the rules of
#   a new or changed CRD against its DefaultCompatibilityVersion, one minor behind it
#   (1.28 in v0.29.0, 1.27 in v0.28.0): 1.28 refuses the CRD, 1.29 is the first to accept.
# - apiPriority's FlowSchema and PriorityLevelConfiguration are
#   flowcontrol.apiserver.k8s.io/v1, served from 1.29.
#
# What it runs: only etcd and kube-apiserver (no controllers, no nodes: no pod runs),
# loopback only, on free ports of their own, beside the shared cluster (127.0.0.1:32764),
# which it never touches. Then, with kubectl (server-side apply) and helm:
#   1. the server reports the version;
#   2. crd/ applies, and the CRD becomes Established;
#   3. a valid KopfAudit is created; an invalid one (a memory threshold that is no
#      quantity) is refused by the CRD's CEL rule, with that rule's message;
#   4. `helm install` of charts/kopf-audit (its kubeVersion is checked by helm against
#      the server) with the defaults, and `helm template | kubectl apply --server-side
#      --dry-run=server` with every optional part this server can hold (FlowSchema and
#      PriorityLevelConfiguration, PDB, NetworkPolicy, namespaced RBAC, 2 replicas).
#
# Cached outside the clone, keyed on the version, so a fresh clone (CI) builds once:
#   $KOPF_AUDIT_CACHE/bin-kube-apiserver-<ver>/kube-apiserver   from its Go module,
#       pinned with a complete go.sum in hack/k8s-oldest/ (cold: see the log line)
#   etcd and kubectl are the ones hack/build-cluster-binaries.sh built for the shared
#   cluster (etcd's API has not changed; kubectl is newer than this server, which
#   server-side apply does not mind).
# Environment: KOPF_AUDIT_CACHE (default ~/.cache/kopf-audit), KOPF_AUDIT_HELM (a helm
# binary; default: hack/build-helm.sh's). Progress and results go to stderr/stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
K8S_VERSION=v1.29.15
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
out="$cache_root/bin-kube-apiserver-${K8S_VERSION}"

log() { echo "[oldest-kube $(date +%H:%M:%S)] $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
checked() { echo "[oldest-kube $(date +%H:%M:%S)] ok: $*"; }

# The chart's claim and this script's version must name the same minor.
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
claim=$(sed -n 's/^kubeVersion: *"\(.*\)"$/\1/p' "$repo/charts/kopf-audit/Chart.yaml")
[ "$claim" = ">=1.$minor.0-0" ] \
  || die "Chart.yaml kubeVersion is '$claim', this script tests $K8S_VERSION: change both together"

# ---- the binaries ----
build_apiserver() {
  [ -x "$out/kube-apiserver" ] && { log "cached: $out/kube-apiserver"; return; }
  mkdir -p "$out"
  log "building kube-apiserver $K8S_VERSION into $out (cold: 10-20 minutes on 2 cores)"
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOSUMDB=off GOFLAGS=-mod=mod
  export GOCACHE=${GOCACHE:-$cache_root/gocache}
  local flags="-s -w -checklinkname=0" pkg
  # -checklinkname=0: Go >= 1.23 refuses some //go:linkname uses of the 1.29-era modules.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  log "downloading modules for k8s.io/kubernetes $K8S_VERSION"
  (cd "$here/k8s-oldest" && go mod download)
  local start=$SECONDS
  (cd "$here/k8s-oldest" && go build -trimpath -ldflags "$flags" -o "$out/kube-apiserver.tmp" \
    k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
  log "kube-apiserver $K8S_VERSION: built in $((SECONDS - start))s"
}
build_apiserver
bindir=$(bash "$here/build-cluster-binaries.sh" | tail -n 1)
etcd="$bindir/etcd"
kubectl="$bindir/kubectl"
[ -x "$etcd" ] && [ -x "$kubectl" ] || die "no etcd or kubectl in $bindir"
helm=${KOPF_AUDIT_HELM:-$(bash "$here/build-helm.sh" | tail -n 1)}

# ---- start etcd and kube-apiserver on free loopback ports ----
work=$(mktemp -d "${TMPDIR:-/tmp}/kopf-audit-oldest-kube.XXXXXX")
pids=()
cleanup() {
  local pid
  # Throwaway servers: SIGKILL, as a graceful kube-apiserver shutdown takes ~20 s.
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
etcd_port=$(free_port)
peer_port=$(free_port)
api_port=$(free_port)
log "etcd on 127.0.0.1:$etcd_port, kube-apiserver $K8S_VERSION on 127.0.0.1:$api_port (work dir $work)"

"$etcd" --name oldest --data-dir "$work/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "oldest=http://127.0.0.1:$peer_port" --log-level warn \
  >"$work/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "$token,admin,admin,system:masters" >"$work/tokens.csv"
"$out/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$work/certs" \
  --advertise-address 127.0.0.1 --service-cluster-ip-range 10.96.0.0/16 \
  --token-auth-file "$work/tokens.csv" --authorization-mode RBAC \
  --service-account-key-file "$work/sa.key" --service-account-signing-key-file "$work/sa.key" \
  --service-account-issuer https://kubernetes.default.svc \
  >"$work/kube-apiserver.log" 2>&1 &
pids+=($!)

cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: oldest
  cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: oldest
  context: {cluster: oldest, user: admin}
current-context: oldest
EOF
kc() { "$kubectl" --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }

start=$SECONDS
until [ "$(kc get --raw /readyz 2>/dev/null)" = ok ]; do
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$work"/*.log >&2; die "etcd or kube-apiserver exited"; }
  done
  [ $((SECONDS - start)) -lt 120 ] || { tail -n 30 "$work/kube-apiserver.log" >&2; die "kube-apiserver not ready in 120s"; }
  sleep 1
done
log "kube-apiserver ready in $((SECONDS - start))s"

# ---- 1. the version ----
server=$(kc version -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
[ "$server" = "$K8S_VERSION" ] || die "the server reports $server, not $K8S_VERSION"
checked "the API server reports $server, the oldest release charts/kopf-audit/Chart.yaml admits ($claim)"

# ---- 2. the CRD ----
kc apply --server-side --field-manager=kopf-audit-ci -f "$repo/crd/" >&2 \
  || die "crd/ was refused by Kubernetes $K8S_VERSION"
kc wait --for condition=Established --timeout=60s crd/kopfaudits.kopfaudit.dev >&2 \
  || die "the CRD did not become Established"
checked "crd/ applied server-side and Established (its CEL rules, quantity() among them, compiled)"

# ---- 3. a valid and an invalid KopfAudit ----
kc create namespace oldest-kube >/dev/null
audit() { # name, memoryRequest
  cat <<EOF
apiVersion: kopfaudit.dev/v1alpha1
kind: KopfAudit
metadata: {name: $1, namespace: oldest-kube}
spec:
  target: {deployment: tenant-operator}
  interval: 5m
  thresholds: {memoryRequest: "$2", memoryLimit: 512Mi}
  logs: {window: 10m, limitBytes: 4Mi}
EOF
}
audit valid 256Mi | kc apply --server-side --field-manager=kopf-audit-ci -f - >&2 \
  || die "a valid KopfAudit was refused"
checked "a valid KopfAudit (memoryRequest 256Mi, limitBytes 4Mi) was created"
if audit invalid lots | kc apply --server-side --field-manager=kopf-audit-ci -f - >"$work/invalid.out" 2>&1; then
  die "a KopfAudit with memoryRequest 'lots' was accepted: the CEL rule did not run"
fi
grep 'spec.thresholds.memoryRequest' "$work/invalid.out" | grep -q 'must be a positive quantity' \
  || { cat "$work/invalid.out" >&2; die "the invalid KopfAudit was refused, but not by the memoryRequest rule"; }
checked "a KopfAudit with memoryRequest 'lots' was refused by its CEL rule: $(grep -o 'spec.thresholds.memoryRequest.*' "$work/invalid.out" | head -n 1)"

# ---- 4. the chart ----
export KUBECONFIG="$work/kubeconfig" HELM_CACHE_HOME="$work/helm/cache" \
  HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"
"$helm" install kopf-audit "$repo/charts/kopf-audit" --namespace kopf-audit --create-namespace >&2 \
  || die "helm install was refused by Kubernetes $K8S_VERSION"
kinds=$(kc get all,poddisruptionbudget,serviceaccount,role,rolebinding,clusterrole,clusterrolebinding,networkpolicy \
  -A -l app.kubernetes.io/instance=kopf-audit -o name | sed 's|/.*||' | sort | uniq -c \
  | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
checked "helm install (defaults; helm checked kubeVersion against $server) created: $kinds"
"$helm" template kopf-audit "$repo/charts/kopf-audit" --kube-version 1.$((minor - 1)).15 >/dev/null 2>"$work/older.out" \
  && die "helm template --kube-version 1.$((minor - 1)).15 succeeded: kubeVersion admits a release older than $K8S_VERSION"
grep -q 'kubeVersion' "$work/older.out" || { cat "$work/older.out" >&2; die "helm refused 1.$((minor - 1)) for another reason"; }
checked "helm refuses Kubernetes 1.$((minor - 1)).15: $(head -n 1 "$work/older.out")"
options=(--set apiPriority.enabled=true --set rbac.namespaced=true --set replicas=2
  --set podDisruptionBudget.enabled=true --set networkPolicy.enabled=true)
# A release of its own (names and namespace), beside the installed one.
kc create namespace kopf-audit-all >/dev/null
"$helm" template kopf-audit-all "$repo/charts/kopf-audit" --namespace kopf-audit-all --kube-version "${server#v}" \
  "${options[@]}" >"$work/all.yaml" || die "helm template with ${options[*]} failed"
kc apply --server-side --dry-run=server --field-manager=kopf-audit-ci -n kopf-audit-all -f "$work/all.yaml" >"$work/dry-run.out" \
  || die "the chart with ${options[*]} was refused by Kubernetes $K8S_VERSION (server-side dry run)"
grep -q '^flowschema.flowcontrol.apiserver.k8s.io/' "$work/dry-run.out" \
  && grep -q '^prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/' "$work/dry-run.out" \
  || { cat "$work/dry-run.out" >&2; die "the dry run did not include the flowcontrol/v1 objects"; }
checked "helm template ${options[*]} | kubectl apply --server-side --dry-run=server: $(wc -l <"$work/dry-run.out") objects accepted, FlowSchema and PriorityLevelConfiguration (flowcontrol/v1) among them"
log "all checks passed on Kubernetes $server in $((SECONDS))s"
