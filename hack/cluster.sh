#!/usr/bin/env bash
# The local Kubernetes cluster the end-to-end tests and the demo run against:
# etcd + kube-apiserver (RBAC on) + kube-controller-manager + kube-scheduler + a kwok
# controller, started as plain local processes by `kwokctl --runtime binary` from
# the binaries hack/build-cluster-binaries.sh builds, loopback addresses only.
#
#   hack/cluster.sh up          build/reuse the binaries, start the cluster, create one
#                               kwok node, wait until healthy; harmless when already up.
#                               Last stdout line: the admin kubeconfig path.
#   hack/cluster.sh down        stop fixtures and the cluster, leave no process behind;
#                               harmless when already down.
#   hack/cluster.sh status      exit 0 and describe the cluster when healthy, else exit 1.
#   hack/cluster.sh kubeconfig  print the admin kubeconfig path ($WORKDIR/kubeconfig).
#
# Environment: KOPF_AUDIT_WORKDIR (default <repo>/.e2e), KOPF_AUDIT_CACHE (binaries
# and the kopf venv, default ~/.cache/kopf-audit). Progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
WORKDIR=${KOPF_AUDIT_WORKDIR:-$repo/.e2e}
case "$WORKDIR" in /*) ;; *) WORKDIR="$PWD/$WORKDIR" ;; esac
CLUSTER=kopf-audit
NODE=kwok-node-0
KUBECONFIG_PATH="$WORKDIR/kubeconfig"
export KWOK_WORKDIR="$WORKDIR/kwok"
export KUBECACHEDIR="$WORKDIR/kube-cache"  # kubectl's discovery cache, not ~/.kube/cache
CLUSTER_DIR="$KWOK_WORKDIR/clusters/$CLUSTER"

log() { echo "[cluster $(date +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

bindir=""
ensure_binaries() {
  log "ensuring the control-plane binaries (hack/build-cluster-binaries.sh; cold build 25-45 min)"
  bindir=$("$here/build-cluster-binaries.sh" | tail -n1) || die "building the cluster binaries failed (see above)"
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl; do
    [ -x "$bindir/$b" ] || die "binary $bindir/$b missing after the build"
  done
  mkdir -p "$WORKDIR"
  ln -sfn "$bindir" "$WORKDIR/bin"
}

# kubectl from the cache (no PATH lookup: a system kubectl may be another version).
kc() {
  local k="$WORKDIR/bin/kubectl"
  [ -x "$k" ] || k=$(command -v kubectl || true)
  [ -n "$k" ] || return 127
  "$k" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=10s "$@"
}

apiserver_ready() { [ -f "$KUBECONFIG_PATH" ] && [ "$(kc get --raw /readyz 2>/dev/null)" = ok ]; }
node_ready() {
  [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
healthy() { apiserver_ready && node_ready; }

wait_for() { # seconds, description, command...
  local timeout=$1 what=$2; shift 2
  local start=$SECONDS
  until "$@"; do
    (( SECONDS - start < timeout )) || return 1
    sleep 1
  done
  log "$what ($((SECONDS - start))s)"
}

# PIDs of the cluster's components: processes whose executable path is under our kwok
# work dir (kwokctl links the binaries into $CLUSTER_DIR/bin). Never matches by name.
our_pids() {
  local p args
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    args=()
    mapfile -d '' args <"$p/cmdline" 2>/dev/null || continue
    [[ "${args[0]:-}" == "$KWOK_WORKDIR/"* ]] && echo "${p#/proc/}"
  done
  return 0
}

write_config() {
  local cfg=$1
  cat >"$cfg" <<EOF
# Written by hack/cluster.sh: kwokctl configuration of the kopf-audit test cluster.
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  runtime: binary
  kubeVersion: v1.37.2
  bindAddress: 127.0.0.1
  securePort: true
  kubeAuthorization: true
  kubeAdmission: true
  quietPull: true
  # kwok serves pod logs from the files that Logs / ClusterLogs objects name.
  # Stages are NOT listed here, so kwokctl writes kwok's default node and pod stages
  # into the controller's config (declaring any Stage, or enabling the Stage CRD,
  # would drop them).
  enableCRDs:
  - Logs
  - ClusterLogs
  etcdBinary: $bindir/etcd
  kubeApiserverBinary: $bindir/kube-apiserver
  kubeControllerManagerBinary: $bindir/kube-controller-manager
  kubeSchedulerBinary: $bindir/kube-scheduler
  kwokControllerBinary: $bindir/kwok
  kubectlBinary: $bindir/kubectl
  cacheDir: $KWOK_WORKDIR/cache
# One instance each, no leader election: a paused API server (the fault tests pause it
# for 40 s) would otherwise cost them their lease, and they would exit.
componentsPatches:
- name: kube-controller-manager
  extraArgs:
  - key: leader-elect
    value: "false"
- name: kube-scheduler
  extraArgs:
  - key: leader-elect
    value: "false"
EOF
}

create_node() {
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: $NODE
    kubernetes.io/os: linux
    kubernetes.io/role: agent
    node-role.kubernetes.io/agent: ""
    type: kwok
spec: {}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
EOF
}

default_sa_exists() { kc -n default get serviceaccount default >/dev/null 2>&1; }

# Whether every named CRD has its Established condition True. Polled (wait_for), not
# `kubectl wait --for=condition=Established`: that fails at once while a just-created
# CRD's status.conditions is still null.
established() { # crd names...
  local crd
  for crd in "$@"; do
    [ "$(kc get "crd/$crd" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] \
      || return 1
  done
}
cmd_established() { # crd names...
  wait_for 60 "CRDs established: $*" established "$@" || die "CRDs not Established after 60s: $*"
}

lock() {
  mkdir -p "$WORKDIR"
  exec 9>"$WORKDIR/.cluster.lock"
  flock 9
}

# kwokctl gives each cluster ports that are free when it looks (from 32767 down), so two
# clusters started at once (the demo, the tests, a bench, each with its own
# KOPF_AUDIT_WORKDIR) would take the same ones: one fails to bind, and its components
# reach the other's API server and fail with x509 errors. Starts are serialised
# machine-wide until every component serves (API server, kwok's node, the controller
# manager's ServiceAccounts), i.e. until their ports are bound.
CACHE_ROOT=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
lock_ports() {
  mkdir -p "$CACHE_ROOT"
  exec 8>"$CACHE_ROOT/.cluster-ports.lock"
  if ! flock -n 8; then
    log "another local cluster is starting: waiting for it to bind its ports"
    flock 8
  fi
}
unlock_ports() { exec 8>&-; }

# A failed start: keep the component logs, show their tails, leave no process behind.
fail_up() {
  local keep="$WORKDIR/failed-start-logs"
  rm -rf "$keep"; mkdir -p "$keep"
  cp "$CLUSTER_DIR"/logs/*.log "$keep/" 2>/dev/null || true
  local f
  for f in "$keep"/*.log; do
    [ -e "$f" ] || continue
    log "--- last lines of $f"; tail -n 15 "$f" >&2
  done
  do_down || true
  die "$* (component logs kept in $keep)"
}

cmd_up() {
  lock
  ensure_binaries
  if healthy; then
    log "cluster $CLUSTER already running and healthy"
    echo "$KUBECONFIG_PATH"
    return 0
  fi
  if [ -d "$CLUSTER_DIR" ] || [ -n "$(our_pids)" ]; then
    log "a previous cluster is present but not healthy: tearing it down first"
    do_down
  fi
  mkdir -p "$KWOK_WORKDIR"
  local cfg="$WORKDIR/kwokctl.yaml"
  write_config "$cfg"
  rm -f "$KUBECONFIG_PATH"
  lock_ports
  log "starting cluster $CLUSTER with kwokctl (binary runtime, work dir $KWOK_WORKDIR)"
  local start=$SECONDS
  # PATH: kwokctl runs `kubectl` from PATH first; make it ours.
  if ! PATH="$bindir:$PATH" KWOK_KUBECTL_BINARY="$bindir/kubectl" \
      "$bindir/kwokctl" --config "$cfg" --name "$CLUSTER" create cluster \
      --runtime binary \
      --kubeconfig "$KUBECONFIG_PATH" \
      --kube-apiserver-binary "$bindir/kube-apiserver" \
      --kube-controller-manager-binary "$bindir/kube-controller-manager" \
      --kube-scheduler-binary "$bindir/kube-scheduler" \
      --kwok-controller-binary "$bindir/kwok" \
      --etcd-binary "$bindir/etcd" \
      --wait 3m 2>&1 8>&- 9>&- | tee "$WORKDIR/kwokctl-create.log" >&2; then
    fail_up "kwokctl could not start the cluster: $(grep -o '"err":"[^"]*' "$WORKDIR/kwokctl-create.log" | tail -n1 | cut -c8-)"
  fi
  [ -f "$KUBECONFIG_PATH" ] || fail_up "kwokctl did not write $KUBECONFIG_PATH"
  wait_for 120 "kube-apiserver /readyz ok" apiserver_ready \
    || fail_up "kube-apiserver not ready after 120s ($(kc get --raw '/readyz?verbose' 2>&1 | grep -v ' ok$' | tail -5))"
  create_node || fail_up "could not create node $NODE"
  wait_for 120 "node $NODE Ready" node_ready \
    || fail_up "node $NODE not Ready after 120s (is the kwok controller running?)"
  wait_for 120 "kube-controller-manager created the default ServiceAccount" default_sa_exists \
    || fail_up "no default ServiceAccount after 120s (is kube-controller-manager running?)"
  unlock_ports
  wait_for 60 "kwok's Logs/ClusterLogs CRDs established" established logs.kwok.x-k8s.io clusterlogs.kwok.x-k8s.io \
    || fail_up "kwok's Logs/ClusterLogs CRDs are not established"
  log "cluster $CLUSTER up in $((SECONDS - start))s: $(kc config view --minify -o 'jsonpath={.clusters[0].cluster.server}'), kubeconfig $KUBECONFIG_PATH"
  echo "$KUBECONFIG_PATH"
}

# Running and not a zombie (a zombie waits for its parent, e.g. a test, to reap it).
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# Fixture supervisors (hack/fixture.py run) register in $WORKDIR/run: stop them first.
stop_fixtures() {
  local f pid pids=()
  for f in "$WORKDIR"/run/fixture-*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'fixture.py'; then
      log "stopping fixture supervisor pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | grep -o -- '--fixture [^ ]* --namespace [^ ]*'))"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
    rm -f "$f"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  for _ in $(seq 1 120); do
    local left=0
    for pid in "${pids[@]}"; do alive "$pid" && left=1; done
    [ $left = 0 ] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
  return 0
}

do_down() {
  stop_fixtures
  local pids kwokctl=""
  pids=$(our_pids | tr '\n' ' ')
  [ -x "$WORKDIR/bin/kwokctl" ] && kwokctl="$WORKDIR/bin/kwokctl"
  if [ -d "$CLUSTER_DIR" ] && [ -n "$kwokctl" ]; then
    log "deleting cluster $CLUSTER"
    PATH="$WORKDIR/bin:$PATH" "$kwokctl" --name "$CLUSTER" delete cluster \
      --kubeconfig "$KUBECONFIG_PATH" >&2 9>&- || log "kwokctl delete cluster failed; killing the processes"
  fi
  local pid
  for pid in $pids; do
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  done
  pids=$(our_pids | tr '\n' ' ')
  if [ -n "${pids// /}" ]; then
    log "killing leftover cluster processes: $pids"
    for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 2
    for pid in $(our_pids); do kill -KILL "$pid" 2>/dev/null || true; done
    sleep 1
  fi
  rm -rf "$CLUSTER_DIR" "$KUBECONFIG_PATH"
  pids=$(our_pids | tr '\n' ' ')
  [ -z "${pids// /}" ] || die "processes still running after down: $pids"
}

cmd_down() {
  lock
  if [ ! -d "$CLUSTER_DIR" ] && [ -z "$(our_pids)" ] && ! ls "$WORKDIR"/run/fixture-*.pid >/dev/null 2>&1; then
    log "cluster $CLUSTER is not running"
    rm -f "$KUBECONFIG_PATH"
    return 0
  fi
  do_down
  log "cluster $CLUSTER is down"
}

cmd_status() {
  if healthy; then
    echo "running: cluster $CLUSTER, server $(kc config view --minify -o 'jsonpath={.clusters[0].cluster.server}'), node $NODE Ready, kubeconfig $KUBECONFIG_PATH"
    return 0
  fi
  if [ -d "$CLUSTER_DIR" ] || [ -n "$(our_pids)" ]; then
    echo "unhealthy: cluster $CLUSTER present (apiserver ready: $(apiserver_ready && echo yes || echo no), node Ready: $(node_ready && echo yes || echo no)), processes: $(our_pids | tr '\n' ' ')"
  else
    echo "down: cluster $CLUSTER is not running"
  fi
  return 1
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kubeconfig) echo "$KUBECONFIG_PATH" ;;
  established) shift; cmd_established "$@" ;;
  *) echo "usage: $0 up|down|status|kubeconfig|established CRD..." >&2; exit 2 ;;
esac
