#!/usr/bin/env bash
# The README's test command: everything CI runs, with all its set-up, on a fresh machine.
#   lint -> local cluster (control plane built once, cached outside the clone) ->
#   kopf venv (cached) -> every test: unit, CRD, end-to-end
# The cluster is stopped at the end unless it was running before we started
# (or KOPF_AUDIT_KEEP_CLUSTER=1 is set).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
step() { echo; echo "=== [test $(date +%H:%M:%S)] $*"; }

step "rust toolchain: the release rust-toolchain.toml pins, without a download (hack/rust-toolchain.sh)"
bash hack/rust-toolchain.sh | tail -n 1

step "cargo's target dir: cached outside the clone, keyed on the toolchain (a fresh clone compiles only this crate)"
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
toolchain_key=$(rustc -V | sha256sum | cut -c1-12)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache_root/cargo-target-test-$toolchain_key}
echo "CARGO_TARGET_DIR=$CARGO_TARGET_DIR"

step "tool versions"
cargo --version
go version
python3 --version

step "system packages: podman, runc, busybox-static (the image tests), prometheus + promtool (the alert tests), chromium (the HTML report test), the arm64 cross gcc + qemu-user-static (hack/release.sh), from Debian"
missing=()
for tool in podman runc prometheus promtool chromium aarch64-linux-gnu-gcc qemu-aarch64-static; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ -x /bin/busybox ] || missing+=(busybox)
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing: ${missing[*]}: apt-get install -y podman runc prometheus busybox-static chromium gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static (a minute or two)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq podman runc prometheus busybox-static chromium \
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static >/dev/null
fi
podman --version
runc --version | head -n 1
prometheus --version 2>&1 | head -n 1
# tests/html_report.rs fails, never skips, without it.
chromium --version

step "format and lint: cargo fmt --check, cargo clippy -D warnings"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --workspace --all-targets --features e2e -- -D warnings

step "supply chain: cargo deny check (hack/deny.sh; cargo-deny built once, cached: 7-8 min cold)"
bash hack/deny.sh

step "local cluster: hack/cluster.sh up (the first run builds the control plane: 25-45 min)"
was_running=no
bash hack/cluster.sh status >/dev/null 2>&1 && was_running=yes
stop_cluster() {
  if [ "$was_running" = no ] && [ "${KOPF_AUDIT_KEEP_CLUSTER:-0}" != 1 ]; then
    step "stopping the local cluster"
    bash hack/cluster.sh down || true
  fi
}
trap stop_cluster EXIT
kubeconfig=$(bash hack/cluster.sh up | tail -n 1)
export KOPF_AUDIT_KUBECONFIG="$kubeconfig"
echo "kubeconfig: $KOPF_AUDIT_KUBECONFIG"
# lint's kustomize tests run the kubectl the cluster was built with (cached: instant).
KOPF_AUDIT_KUBECTL="$(bash hack/build-cluster-binaries.sh | tail -n 1)/kubectl"
export KOPF_AUDIT_KUBECTL
echo "kubectl for lint's kustomize tests: $KOPF_AUDIT_KUBECTL"

step "kopf venv: hack/kopf-venv.sh"
bash hack/kopf-venv.sh | tail -n 1

step "helm: hack/build-helm.sh (built once from its Go module, cached: 4-8 min cold), helm lint, helm template"
helm=$(bash hack/build-helm.sh | tail -n 1)
export KOPF_AUDIT_HELM="$helm"
"$helm" lint --strict charts/kopf-audit
"$helm" lint --strict charts/kopf-audit --set rbac.namespaced=true --set replicas=2 --set serviceMonitor.enabled=true --set prometheusRule.enabled=true
"$helm" lint --strict charts/kopf-audit --set rbac.clusterAudits=false
"$helm" template kopf-audit charts/kopf-audit --namespace kopf-audit --include-crds >/dev/null
"$helm" template kopf-audit charts/kopf-audit --namespace kopf-audit --set rbac.namespaced=true --set replicas=2 --set serviceMonitor.enabled=true --set prometheusRule.enabled=true >/dev/null
# /metrics guarded both ways: authenticated with the NetworkPolicy off, and open with none.
metrics_auth=(--set metrics.authenticated=true --set networkPolicy.enabled=false --set serviceMonitor.enabled=true
  --set metrics.readers[0].kind=ServiceAccount --set metrics.readers[0].name=prometheus --set metrics.readers[0].namespace=monitoring)
"$helm" lint --strict charts/kopf-audit "${metrics_auth[@]}"
"$helm" template kopf-audit charts/kopf-audit --namespace kopf-audit "${metrics_auth[@]}" >/dev/null
"$helm" lint --strict charts/kopf-audit --set networkPolicy.enabled=false --set metrics.authenticated=false

step "chart-testing: hack/build-chart-testing.sh (ct, yamllint, yamale; built once, cached: 1-3 min cold), ct lint"
ct_dir=$(bash hack/build-chart-testing.sh | tail -n 1)
# ct runs helm, yamllint and yamale from PATH; its schema and lint config from the cache.
PATH="$(dirname "$helm"):$ct_dir/venv/bin:$PATH" "$ct_dir/ct" lint --config ct.yaml \
  --chart-yaml-schema "$ct_dir/etc/chart_schema.yaml" --lint-conf "$ct_dir/etc/lintconf.yaml"

step "the oldest Kubernetes the chart claims: hack/oldest-kube.sh (kube-apiserver of that release built once, cached: see BENCHMARKS.md; CRD, CEL, helm install)"
bash hack/oldest-kube.sh

step "kube-state-metrics: hack/build-kube-state-metrics.sh (built once from its Go module, cached)"
bash hack/build-kube-state-metrics.sh | tail -n 1

step "the image: hack/image.sh (static release binary FROM scratch with podman, cached per source hash; cold: see BENCHMARKS.md)"
KOPF_AUDIT_IMAGE=$(bash hack/image.sh | tail -n 1)
export KOPF_AUDIT_IMAGE
echo "image archive: $KOPF_AUDIT_IMAGE"

step "release artifacts: hack/release.sh (image labels, SBOM, amd64 + arm64 binaries under qemu, chart, krew manifest, SHA256SUMS; cosign signatures and attestations, verified offline; cached per source hash)"
release_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
bash hack/release.sh "$release_version"

step "Argo CD health check: hack/argocd (vendored Lua 5.1, a workspace of its own)"
cargo fmt --manifest-path hack/argocd/Cargo.toml -- --check
cargo clippy --manifest-path hack/argocd/Cargo.toml --all-targets -- -D warnings
cargo test --manifest-path hack/argocd/Cargo.toml

step "all tests: cargo test --workspace (end-to-end tests print their progress)"
cargo test --workspace --features e2e --no-fail-fast -- --test-threads="${KOPF_AUDIT_TEST_THREADS:-4}"
echo "HTML report rendered by Chromium (tests/html_report.rs): $CARGO_TARGET_DIR/test-artifacts/report.html, its screenshot $CARGO_TARGET_DIR/test-artifacts/report.png"
