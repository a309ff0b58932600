#!/usr/bin/env bash
# Captures real kopf output as test data for the log parser (crates/kopf-log/tests/data/captured/).
#
# hack/capture-kopf-logs.sh
#   From the fixtures, in kopf's three log formats. Needs the local cluster
#   (hack/cluster.sh up). Each fixture runs for $SECONDS_PER_RUN (default 75 s: kopf
#   retries a 403 for ~54 s before it logs the outcome).
# hack/capture-kopf-logs.sh local [VERSION...]
#   Without a cluster, for each kopf VERSION (default: 1.38.0 1.43.0 1.45.2, venvs from
#   hack/kopf-venv.sh VERSION): runs crates/kopf-log/tests/capture/capture_operator.py against
#   crates/kopf-log/tests/capture/fake_apiserver.py on 127.0.0.1 (handler failures, a
#   pruned status, forbidden Events, a 429, a watcher that fails on 403, a peering
#   keep-alive that fails on 500 while a higher-priority peer pauses the operator, with
#   peering auto-detected) for
#   $LOCAL_SECONDS (default 14 s) per run, and writes kopf-VERSION-RUN.FORMAT.log with the
#   kubelet's timestamps=true prefix added, as the pods/log API serves it.
#   Then the runs about faults of the operator's own runtime
#   (crates/kopf-log/tests/capture/capture_faults.py, CAPTURE_FAULT=RUN), each with a
#   compliant twin RUN-ok: `creds` (the token is revoked with 401 and the login gives it
#   again), `tls` (HTTPS with a self-signed certificate, made at run time in a temporary
#   directory and deleted after, that the operator does not trust), `threads` (sync
#   daemons past what the process may map for thread stacks); written as
#   kopf-VERSION-RUN.full.log.
# hack/capture-kopf-logs.sh faults [VERSION...]
#   Only the runs about faults (default: 1.38.0 1.45.2).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

log() { echo "[capture $(date +%H:%M:%S)] $*" >&2; }
# Whole lines only, at most 60 kB of them (the rest is read and dropped).
stamp_py='import datetime, sys
size = 0
for line in sys.stdin:
    t = datetime.datetime.now(datetime.timezone.utc)
    out = t.strftime("%Y-%m-%dT%H:%M:%S.%f000Z ") + line
    size += len(out.encode())
    if size <= 60000:
        sys.stdout.write(out)
        sys.stdout.flush()'

capture_local() {
  local versions=("$@")
  [ ${#versions[@]} -gt 0 ] || versions=(1.38.0 1.43.0 1.45.2)
  local here=crates/kopf-log/tests/capture out=crates/kopf-log/tests/data/captured
  local seconds=${LOCAL_SECONDS:-14}
  # name:format:beacons-ok-seconds:kopf-flags
  local runs=("handlers:full:10:--standalone --verbose" "handlers:json:10:--standalone"
              "peering:plain:1000:")
  mkdir -p "$out"
  for version in "${versions[@]}"; do
    local venv
    venv=$(bash hack/kopf-venv.sh "$version" | tail -n 1)
    for run in "${runs[@]}"; do
      IFS=: read -r name format beacons flags <<<"$run"
      local port file="$out/kopf-$version-$name.$format.log"
      port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      log "kopf $version, $name ($format, $flags): ${seconds}s against 127.0.0.1:$port"
      "$venv/bin/python" "$here/fake_apiserver.py" "$port" "$beacons" 2>/dev/null &
      local api=$!
      sleep 1
      # kopf's output with the kubelet's prefix (RFC 3339 UTC, at the time each line is read).
      # shellcheck disable=SC2086 # the flags are words
      PYTHONUNBUFFERED=1 FAKE_APISERVER="http://127.0.0.1:$port" "$venv/bin/kopf" run "$here/capture_operator.py" -n capture \
        --log-format "$format" $flags > >("$venv/bin/python" -u -c "$stamp_py" >"$file") 2>&1 &
      local kopf=$!
      for _ in $(seq "$seconds"); do kill -0 "$kopf" 2>/dev/null || break; sleep 1; done
      kill -TERM "$kopf" 2>/dev/null || true
      wait "$kopf" 2>/dev/null || true
      kill -TERM "$api" 2>/dev/null || true
      wait "$api" 2>/dev/null || true
      sleep 1
      log "captured $file ($(wc -l <"$file") lines)"
    done
    capture_faults "$venv" "$version"
  done
}

# The runs about the operator's own runtime: CAPTURE_FAULT=RUN, and the fake server's options.
capture_faults() {
  local venv=$1 version=$2
  local here=crates/kopf-log/tests/capture out=crates/kopf-log/tests/data/captured
  local seconds=${LOCAL_SECONDS:-14} tmp
  tmp=$(mktemp -d)
  # A throw-away self-signed certificate for 127.0.0.1; never committed.
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
  # name:server-options (words)
  local runs=("creds:--revoke 4" "creds-ok:--revoke 4" "tls:--tls $tmp/cert.pem $tmp/key.pem"
              "tls-ok:--tls $tmp/cert.pem $tmp/key.pem" "threads:--examples 6" "threads-ok:--examples 6")
  for run in "${runs[@]}"; do
    local name=${run%%:*} options=${run#*:} scheme=http ca=
    case $name in tls*) scheme=https ;; esac
    [ "$name" = tls-ok ] && ca=$tmp/cert.pem
    local port file="$out/kopf-$version-$name.full.log"
    port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    log "kopf $version, fault $name: ${seconds}s against $scheme://127.0.0.1:$port"
    # shellcheck disable=SC2086 # the options are words
    "$venv/bin/python" "$here/fake_apiserver.py" "$port" 1000 $options 2>/dev/null &
    local api=$!
    sleep 1
    CAPTURE_FAULT=$name FAKE_APISERVER_CA=$ca PYTHONUNBUFFERED=1 FAKE_APISERVER="$scheme://127.0.0.1:$port" \
      "$venv/bin/kopf" run "$here/capture_faults.py" -n capture --standalone \
      > >("$venv/bin/python" -u -c "$stamp_py" >"$file") 2>&1 &
    local kopf=$!
    for _ in $(seq "$seconds"); do kill -0 "$kopf" 2>/dev/null || break; sleep 1; done
    kill -TERM "$kopf" 2>/dev/null || true
    # Starved of threads, kopf may not finish its shutdown: killed after 5 s.
    for _ in 1 2 3 4 5; do kill -0 "$kopf" 2>/dev/null || break; sleep 1; done
    pkill -KILL -P "$kopf" 2>/dev/null || true
    kill -KILL "$kopf" 2>/dev/null || true
    wait "$kopf" 2>/dev/null || true
    kill -TERM "$api" 2>/dev/null || true
    wait "$api" 2>/dev/null || true
    sleep 1
    log "captured $file ($(wc -l <"$file") lines)"
  done
  rm -rf "$tmp"
}

if [ "${1:-}" = faults ]; then
  # Only the runs about faults: hack/capture-kopf-logs.sh faults [VERSION...]
  shift
  versions=("$@")
  [ ${#versions[@]} -gt 0 ] || versions=(1.38.0 1.45.2)
  for version in "${versions[@]}"; do
    capture_faults "$(bash hack/kopf-venv.sh "$version" | tail -n 1)" "$version"
  done
  exit 0
fi
if [ "${1:-}" = local ]; then
  shift
  capture_local "$@"
  exit 0
fi
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
