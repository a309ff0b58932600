#!/usr/bin/env bash
# Builds, checks and signs a release's artifacts, into one directory, with no upload (a
# registry only in memory on 127.0.0.1, for the image's signatures) and a throwaway key
# (.github/workflows/release.yml runs this on a tag, then publishes them, signed keyless):
#
#   hack/release.sh VERSION [OUTDIR]      OUTDIR defaults to target/release-artifacts/VERSION
#
#   kopf-audit-VERSION-image.oci.tar       the operator image (hack/image.sh's, FROM scratch),
#                                          named <chart image.repository>:VERSION, with the
#                                          OCI labels source, version, revision, created
#   kopf-audit-VERSION-linux-amd64         the static (glibc, crt-static) release binaries;
#   kopf-audit-VERSION-linux-arm64         arm64 cross-compiled with Debian's aarch64 gcc
#   kopf-audit-VERSION.cdx.json            CycloneDX SBOM from Cargo.lock (cargo-cyclonedx)
#   kopf-audit-VERSION.tgz                 the chart (helm package)
#   kubectl-kopf_audit-VERSION-linux-{amd64,arm64}.tar.gz   the kubectl plugin's archives
#   kopf-audit.krew.yaml                   the krew plugin manifest, with their sha256
#   SHA256SUMS                             over all of the above
#   signed-locally/                        signatures made with a key pair of this run
#     cosign.pub                           (thrown away at its end; not published: the
#     SHA256SUMS.sig                       workflow signs keyless): its public key, the
#     provenance.slsa.json                 signature of SHA256SUMS, the image's provenance
#
# Every artifact is checked here, and any failed check fails the script (hack/test.sh
# runs it): the image's labels with `podman inspect` of the archive loaded into an empty
# store; the SBOM against `cargo tree` (hack/release-check-sbom.py: every crate compiled
# into the binary, and no local path); each binary's architecture, that it is static,
# and its `--version` (arm64 under qemu-user); the chart's version and image; the krew
# manifest's sha256 against its archives, and the plugin in each archive runs;
# `sha256sum -c SHA256SUMS`.
#
# Then signed and verified with cosign, offline (no transparency log, no network but
# 127.0.0.1): SHA256SUMS as a blob (`cosign sign-blob`, `verify-blob`); the image pushed
# from its archive to a registry in memory on 127.0.0.1 (`crane registry serve`, stopped
# on exit) and, by its digest, signed (`cosign sign`), with the SBOM attested (`cosign
# attest --type cyclonedx`) and an SLSA v1 provenance of this script, commit and version
# (`--type slsaprovenance1`); then `cosign verify` and `verify-attestation` of each, which
# must name the archive's digest and the release's SBOM and provenance. A tampered
# SHA256SUMS, and each signature under another key, must be refused. The image signed
# is linux/amd64 only: the amd64+arm64 manifest list is made by the workflow.
#
# VERSION must be the version of Cargo.toml and of the chart (version and appVersion):
# the binary reports Cargo.toml's, and the chart's default image tag is its appVersion.
#
# Cached outside the clone (the expensive parts), so a fresh clone (CI) reuses them:
#   $KOPF_AUDIT_CACHE/image-<key>/                 hack/image.sh: the image and the amd64
#                                                  binary, keyed on the binary's inputs
#   $KOPF_AUDIT_CACHE/release-arm64-<key>/         the arm64 binary, keyed the same way
#   $KOPF_AUDIT_CACHE/cargo-target-image/          cargo's target dir, shared with image.sh
#                                                  (the host build scripts compile once)
#   $KOPF_AUDIT_CACHE/bin-cargo-cyclonedx-<ver>/   cargo-cyclonedx, `cargo install --locked`
#   $KOPF_AUDIT_CACHE/podman-release/              podman's storage for the relabelling
#   $KOPF_AUDIT_CACHE/bin-cosign-<ver>-crane-<ver>/ hack/build-cosign.sh: cosign, crane
# Everything else (labels, SBOM, chart, archives, sums, signatures) is redone on each
# run, in seconds.
# Timings (2 cores): BENCHMARKS.md, "Release artifacts".
#
# Needs: podman and runc, gcc-aarch64-linux-gnu and libc6-dev-arm64-cross (the arm64
# link), qemu-user-static (its test), and the rust-std of aarch64-unknown-linux-gnu for
# the pinned toolchain (`rustup target add`, done here when missing). hack/test.sh
# installs the Debian packages.
# Revision: the label `revision` is the commit checked out (HEAD). A cached binary
# reports the commit it was compiled at; that is accepted only when HEAD's history has
# that commit and none of the binary's inputs (Cargo.toml, Cargo.lock, build.rs, src/,
# crates/) differ from it; otherwise the binary is rebuilt here (amd64: hack/image.sh's
# cache entry is replaced).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
CYCLONEDX_VERSION=0.5.9
ARM_TARGET=aarch64-unknown-linux-gnu
STATIC_RUSTFLAGS="-C target-feature=+crt-static"
BINARY_INPUTS=(Cargo.toml Cargo.lock build.rs src crates)

log() { echo "[release $(date +%H:%M:%S)] $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
checked() { echo "[release $(date +%H:%M:%S)] ok: $*"; }
step_start=$SECONDS
step() { log "--- $* (+$((SECONDS - step_start))s so far)"; }

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: hack/release.sh VERSION [OUTDIR]" >&2; exit 2; }
VERSION=$1
OUTDIR=${2:-$repo/target/release-artifacts/$VERSION}
case "$OUTDIR" in /*) ;; *) OUTDIR="$PWD/$OUTDIR" ;; esac

# ---- what the release is ----
yaml_field() { sed -n "s/^$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" "$2" | head -n 1; }
cargo_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
chart="$repo/charts/kopf-audit"
chart_version=$(yaml_field version "$chart/Chart.yaml")
app_version=$(yaml_field appVersion "$chart/Chart.yaml")
[ "$VERSION" = "$cargo_version" ] && [ "$VERSION" = "$chart_version" ] && [ "$VERSION" = "$app_version" ] \
  || die "VERSION $VERSION differs from Cargo.toml ($cargo_version) or Chart.yaml (version $chart_version, appVersion $app_version)"
source_url=$(yaml_field home "$chart/Chart.yaml")
image_repo=$(sed -n 's/^  repository: *\(.*\)$/\1/p' "$chart/values.yaml" | head -n 1)
[ -n "$source_url" ] && [ -n "$image_repo" ] || die "no home in Chart.yaml or no image.repository in values.yaml"
revision=$(git -C "$repo" rev-parse HEAD)
created=$(TZ=UTC git -C "$repo" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)
git -C "$repo" diff --quiet HEAD -- "${BINARY_INPUTS[@]}" \
  || log "WARNING: the binary's inputs have uncommitted changes: revision $revision does not describe them"
log "release $VERSION of $source_url at $revision (committed $created) into $OUTDIR"

# Only a directory this script made (its marker file) is emptied first.
marker=.kopf-audit-release
# The local signatures' own directory: SHA256SUMS does not list it, nor is it published.
signed_dir=signed-locally
if [ -e "$OUTDIR" ] && [ -n "$(ls -A "$OUTDIR")" ] && [ ! -f "$OUTDIR/$marker" ]; then
  die "$OUTDIR is not empty and was not made by hack/release.sh: not overwriting it"
fi
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"
touch "$OUTDIR/$marker"
work=$(mktemp -d "${TMPDIR:-/tmp}/kopf-audit-release.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A binary's `--version` names the commit it was compiled at: accept it when that commit's
# binary inputs are the ones checked out.
check_binary() { # path, expected machine (readelf), runner...
  local bin=$1 machine=$2; shift 2
  readelf -h "$bin" | grep -q "Machine: *$machine" || die "$bin is not $machine: $(readelf -h "$bin" | grep Machine)"
  if readelf -l "$bin" | grep -q INTERP; then die "$bin is not static (it has a program interpreter)"; fi
  local printed built
  printed=$("$@" "$bin" --version) || die "$bin --version failed"
  [[ "$printed" =~ ^kopf-audit\ $VERSION\ \(([0-9a-f]{7,40})\)$ ]] \
    || die "$bin --version printed '$printed', not 'kopf-audit $VERSION (<commit>)'"
  built=${BASH_REMATCH[1]}
  git -C "$repo" merge-base --is-ancestor "$built" HEAD 2>/dev/null \
    || die "$bin was built at $built, which is not in this checkout's history"
  git -C "$repo" diff --quiet "$built" -- "${BINARY_INPUTS[@]}" \
    || die "$bin was built at $built, whose sources differ from the checkout"
  checked "$(basename "$bin"): $machine, static, '${*:+$* }--version' prints '$printed'"
}

# Whether a cached binary is fit for this checkout: the commit its `--version` names is
# in HEAD's history and has the same binary inputs. A cache entry is keyed on the sources
# only, so it may come from a commit this clone lacks (rebased away, another clone's):
# then it is rebuilt, once, at this commit.
fresh() { # path, runner...
  local bin=$1 printed built; shift
  printed=$("$@" "$bin" --version 2>/dev/null) || return 1
  [[ "$printed" =~ \(([0-9a-f]{7,40})\)$ ]] || return 1
  built=${BASH_REMATCH[1]}
  git -C "$repo" merge-base --is-ancestor "$built" HEAD 2>/dev/null \
    && git -C "$repo" diff --quiet "$built" -- "${BINARY_INPUTS[@]}"
}

# ---- linux/amd64: the image and its binary (hack/image.sh, cached per source hash) ----
step "the amd64 binary and the image: hack/image.sh"
image_archive=$(bash "$here/image.sh" | tail -n 1)
if ! fresh "$(dirname "$image_archive")/kopf-audit"; then
  log "hack/image.sh's cached binary names a commit this clone lacks or other sources: rebuilding it here"
  rm -rf "$(dirname "$image_archive")"
  image_archive=$(bash "$here/image.sh" | tail -n 1)
fi
cp "$(dirname "$image_archive")/kopf-audit" "$OUTDIR/kopf-audit-$VERSION-linux-amd64"
check_binary "$OUTDIR/kopf-audit-$VERSION-linux-amd64" "Advanced Micro Devices X86-64"

# ---- linux/arm64: cross-compiled, run under qemu-user ----
step "the arm64 binary: cargo build --target $ARM_TARGET (cached per source hash)"
for tool in aarch64-linux-gnu-gcc qemu-aarch64-static; do
  command -v "$tool" >/dev/null \
    || die "$tool is missing: apt-get install -y gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static"
done
bash "$here/rust-toolchain.sh" >/dev/null
if ! ls "$(rustc --print target-libdir --target "$ARM_TARGET" 2>/dev/null)"/libstd-*.rlib >/dev/null 2>&1; then
  command -v rustup >/dev/null || die "no rust-std for $ARM_TARGET and no rustup to add it"
  log "adding the rust-std of $ARM_TARGET to the pinned toolchain (rustup target add: a download of about 30 MB)"
  (cd "$repo" && rustup target add "$ARM_TARGET" >&2) || die "rustup target add $ARM_TARGET failed"
fi
arm_key=$(
  cd "$repo"
  {
    rustc -vV
    cargo -V
    aarch64-linux-gnu-gcc --version | head -n 1
    echo "$ARM_TARGET release $STATIC_RUSTFLAGS"
    find "${BINARY_INPUTS[@]}" -type f -not -path '*/target/*' -not -name '*.orig' 2>/dev/null \
      | LC_ALL=C sort | xargs sha256sum
  } | sha256sum | cut -c1-16
)
arm_out="$cache_root/release-arm64-$arm_key"
if [ -x "$arm_out/kopf-audit" ] && fresh "$arm_out/kopf-audit" qemu-aarch64-static; then
  log "cached: $arm_out/kopf-audit"
else
  target_dir="$cache_root/cargo-target-image"
  log "building in $target_dir (cold: every dependency for aarch64, then fat LTO; see BENCHMARKS.md)"
  start=$SECONDS
  (cd "$repo" && CARGO_TARGET_DIR="$target_dir" RUSTFLAGS="$STATIC_RUSTFLAGS" \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
    cargo build --locked --profile release --target "$ARM_TARGET" --bin kopf-audit)
  mkdir -p "$arm_out.tmp"
  cp "$target_dir/$ARM_TARGET/release/kopf-audit" "$arm_out.tmp/kopf-audit"
  rm -rf "$arm_out"
  mv "$arm_out.tmp" "$arm_out"
  log "arm64 binary built in $((SECONDS - start))s"
  ls -1dt "$cache_root"/release-arm64-* 2>/dev/null | grep -v '\.tmp$' | tail -n +4 | xargs -r rm -rf
fi
cp "$arm_out/kopf-audit" "$OUTDIR/kopf-audit-$VERSION-linux-arm64"
check_binary "$OUTDIR/kopf-audit-$VERSION-linux-arm64" AArch64 qemu-aarch64-static

# ---- the image, named and labelled for the release ----
step "the image: labels, then podman inspect of the saved archive"
store="$cache_root/podman-release"
mkdir -p "$store"
podman_() { # storage dir, args...
  local s=$1; shift
  podman --root "$s/root" --runroot "$s/runroot" --tmpdir "$s/tmp" \
    --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
}
mkdir -p "$store/tmp"
base=$(sed -n 's/^IMAGE_REF=//p' "$(dirname "$image_archive")/image.env")
[ -n "$base" ] || die "no IMAGE_REF in hack/image.sh's image.env beside $image_archive"
podman_ "$store" load --quiet -i "$image_archive" >/dev/null
ref="$image_repo:$VERSION"
labels=(
  "org.opencontainers.image.source=$source_url"
  "org.opencontainers.image.version=$VERSION"
  "org.opencontainers.image.revision=$revision"
  "org.opencontainers.image.created=$created"
)
label_args=()
for l in "${labels[@]}"; do label_args+=(--label "$l"); done
printf 'FROM %s\n' "$base" >"$work/Containerfile"
podman_ "$store" build --quiet --network=none --pull=never --layers=false \
  "${label_args[@]}" -t "$ref" -f "$work/Containerfile" "$work" >/dev/null
image_file="kopf-audit-$VERSION-image.oci.tar"
podman_ "$store" save --quiet --format oci-archive -o "$OUTDIR/$image_file" "$ref"
# Nothing stays in this store between runs (older images would pile up in it).
podman_ "$store" rmi -f "$ref" "$base" >/dev/null 2>&1 || true
# Checked as a user would see it: loaded from the archive into an empty store.
mkdir -p "$work/verify/tmp"
podman_ "$work/verify" load --quiet -i "$OUTDIR/$image_file" >/dev/null
podman_ "$work/verify" image inspect "$ref" >"$work/inspect.json"
python3 - "$work/inspect.json" "$ref" "${labels[@]}" <<'EOF' || die "the image's labels (podman inspect) are wrong"
import json, sys
image = json.load(open(sys.argv[1]))[0]
ref, want = sys.argv[2], dict(l.split("=", 1) for l in sys.argv[3:])
want["org.opencontainers.image.licenses"] = "Apache-2.0"  # the Dockerfile's own labels stay
want["org.opencontainers.image.title"] = "kopf-audit"
labels = image.get("Labels") or {}
bad = {k: (v, labels.get(k)) for k, v in want.items() if labels.get(k) != v}
for k, (w, got) in bad.items():
    print(f"  label {k}: want {w!r}, got {got!r}", file=sys.stderr)
config = image.get("Config") or {}
facts = {"Architecture": image.get("Architecture"), "Os": image.get("Os"), "User": config.get("User")}
if facts != {"Architecture": "amd64", "Os": "linux", "User": "65532:65532"}:
    print(f"  not linux/amd64 as 65532:65532: {facts}", file=sys.stderr)
    bad["facts"] = facts
if not any(n.endswith(ref) for n in image.get("RepoTags") or []):
    print(f"  not named {ref}: {image.get('RepoTags')}", file=sys.stderr)
    bad["name"] = ref
sys.exit(1 if bad else 0)
EOF
rm -rf "$work/verify"
checked "$image_file: $ref, linux/amd64, user 65532, labels (podman inspect of the loaded archive): $(printf '%s ' "${labels[@]#org.opencontainers.image.}")"

# ---- the SBOM ----
step "the SBOM: cargo-cyclonedx $CYCLONEDX_VERSION from Cargo.lock"
cyclonedx_dir="$cache_root/bin-cargo-cyclonedx-$CYCLONEDX_VERSION"
if [ ! -x "$cyclonedx_dir/bin/cargo-cyclonedx" ]; then
  log "building cargo-cyclonedx $CYCLONEDX_VERSION into $cyclonedx_dir (cold: minutes; see BENCHMARKS.md)"
  start=$SECONDS
  (cd "$repo" && CARGO_TARGET_DIR="$cache_root/cargo-target-cyclonedx" \
    cargo install cargo-cyclonedx --version "$CYCLONEDX_VERSION" --locked --root "$cyclonedx_dir.tmp" >&2)
  mkdir -p "$cyclonedx_dir/bin"
  mv "$cyclonedx_dir.tmp/bin/cargo-cyclonedx" "$cyclonedx_dir/bin/cargo-cyclonedx"
  rm -rf "$cyclonedx_dir.tmp" "$cache_root/cargo-target-cyclonedx"
  log "cargo-cyclonedx built in $((SECONDS - start))s"
fi
# In a copy of the manifests and sources: cargo-cyclonedx writes beside each Cargo.toml.
mkdir -p "$work/sbom"
(cd "$repo" && cp -a Cargo.toml Cargo.lock build.rs rust-toolchain.toml src crates "$work/sbom/")
sbom_file="kopf-audit-$VERSION.cdx.json"
# x86_64's graph: aarch64's is a subset of it (the checker below verifies both).
# SOURCE_DATE_EPOCH: the commit's time as the SBOM's timestamp.
(cd "$work/sbom" && SOURCE_DATE_EPOCH=$(git -C "$repo" log -1 --format=%ct HEAD) \
  PATH="$cyclonedx_dir/bin:$PATH" cargo cyclonedx --format json --spec-version 1.5 \
  --target x86_64-unknown-linux-gnu --no-build-deps --override-filename kopf-audit.cdx >&2)
# The workspace's own packages get cargo's package IDs as bom-refs, which hold the
# absolute path they were generated in (path+file:///tmp/...): made relative to the
# workspace root, the same in every reference, so the SBOM names no local path.
python3 - "$work/sbom/kopf-audit.cdx.json" "$OUTDIR/$sbom_file" "$work/sbom" <<'EOF'
import json, sys
src, dst, root = sys.argv[1:]
text = open(src, encoding="utf-8").read().replace("path+file://" + root, "path+file://.")
json.loads(text)
open(dst, "w", encoding="utf-8").write(text)
EOF
python3 "$here/release-check-sbom.py" "$repo" "$OUTDIR/$sbom_file" "$work/sbom" x86_64-unknown-linux-gnu "$ARM_TARGET" \
  || die "the SBOM does not list the binary's crates (hack/release-check-sbom.py)"

# ---- the chart ----
step "the chart: helm package"
helm=${KOPF_AUDIT_HELM:-$(bash "$here/build-helm.sh" | tail -n 1)}
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"
"$helm" package "$chart" --version "$VERSION" --app-version "$VERSION" -d "$OUTDIR" >&2
chart_file="kopf-audit-$VERSION.tgz"
[ -f "$OUTDIR/$chart_file" ] || die "helm package wrote no $chart_file"
# Into files first: `grep -q` closing a pipe early would fail it under pipefail.
tar -tzf "$OUTDIR/$chart_file" >"$work/chart.files"
"$helm" show chart "$OUTDIR/$chart_file" >"$work/chart.yaml"
"$helm" template kopf-audit "$OUTDIR/$chart_file" >"$work/chart.rendered"
grep -qx 'kopf-audit/crds/kopfaudit.dev_kopfaudits.yaml' "$work/chart.files" \
  || die "$chart_file has no crds/kopfaudit.dev_kopfaudits.yaml"
grep -qx "version: $VERSION" "$work/chart.yaml" || die "$chart_file is not version $VERSION"
grep -q "image: \"$image_repo:$VERSION\"" "$work/chart.rendered" \
  || die "$chart_file does not run $image_repo:$VERSION by default"
checked "$chart_file: chart $VERSION with its CRD, runs $image_repo:$VERSION by default"

# ---- the kubectl plugin: archives and krew manifest ----
step "the kubectl plugin: archives, krew manifest"
# src/bin/kubectl-kopf_audit.rs is the same program (kopf_audit::main) under the name
# kubectl looks for, so the archives hold the release binary under that name: one LTO
# link serves both.
plugin_archive() { # arch
  local dir="$work/plugin-$1" name="kubectl-kopf_audit-$VERSION-linux-$1.tar.gz"
  mkdir -p "$dir"
  cp "$OUTDIR/kopf-audit-$VERSION-linux-$1" "$dir/kubectl-kopf_audit"
  cp "$repo/LICENSE" "$dir/LICENSE"
  chmod 0755 "$dir/kubectl-kopf_audit"; chmod 0644 "$dir/LICENSE"
  tar -C "$dir" --sort=name --mtime="$created" --owner=0 --group=0 --numeric-owner \
    -cf - kubectl-kopf_audit LICENSE | gzip -n -9 >"$OUTDIR/$name"
  echo "$name"
}
amd64_archive=$(plugin_archive amd64)
arm64_archive=$(plugin_archive arm64)
download="$source_url/releases/download/v$VERSION"
platform() { # arch, archive
  cat <<EOF
  - selector:
      matchLabels:
        os: linux
        arch: $1
    uri: $download/$2
    sha256: $(sha256sum "$OUTDIR/$2" | cut -d' ' -f1)
    files:
      - from: kubectl-kopf_audit
        to: .
      - from: LICENSE
        to: .
    bin: kubectl-kopf_audit
EOF
}
{
  cat <<EOF
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: kopf-audit
spec:
  version: v$VERSION
  homepage: $source_url
  shortDescription: Audit Python operators written with kopf
  description: |
    Audits operators written with kopf (the Python operator framework) for RBAC,
    Events, persistence, runtime health and workload problems: from the cluster
    (check, report), or from their Python source (lint), without installing the
    kopf-audit operator.
  platforms:
EOF
  platform amd64 "$amd64_archive"
  platform arm64 "$arm64_archive"
} >"$OUTDIR/kopf-audit.krew.yaml"
python3 - "$OUTDIR" "$download" "$VERSION" "$work/krew" <<'EOF' || die "the krew manifest does not match its archives"
import hashlib, os, subprocess, sys, tarfile, yaml
outdir, download, version, scratch = sys.argv[1:5]
manifest = yaml.safe_load(open(os.path.join(outdir, "kopf-audit.krew.yaml")))
assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "kopf-audit", manifest
assert manifest["spec"]["version"] == f"v{version}", manifest["spec"]["version"]
arches = set()
for p in manifest["spec"]["platforms"]:
    arch = p["selector"]["matchLabels"]["arch"]
    arches.add(arch)
    uri = p["uri"]
    assert uri.startswith(download + "/"), uri
    path = os.path.join(outdir, uri.rsplit("/", 1)[1])
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert p["sha256"] == digest, f"{arch}: manifest sha256 {p['sha256']}, archive {digest}"
    dest = os.path.join(scratch, arch)
    with tarfile.open(path) as t:
        assert sorted(t.getnames()) == ["LICENSE", "kubectl-kopf_audit"], t.getnames()
        t.extractall(dest, filter="data")
    runner = [] if arch == "amd64" else ["qemu-aarch64-static"]
    printed = subprocess.run(runner + [os.path.join(dest, p["bin"]), "--version"],
                             check=True, capture_output=True, text=True).stdout.strip()
    assert printed.startswith(f"kopf-audit {version} ("), printed
    print(f"[release] ok: krew {arch}: sha256 {digest[:16]}... matches {os.path.basename(path)}; "
          f"its {p['bin']} {'under qemu ' if runner else ''}prints '{printed}'")
assert arches == {"amd64", "arm64"}, arches
EOF

# ---- SHA256SUMS ----
step "SHA256SUMS"
(cd "$OUTDIR" && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name "$marker" -printf '%f\n' | LC_ALL=C sort \
  | xargs sha256sum >SHA256SUMS)
(cd "$OUTDIR" && sha256sum -c --strict SHA256SUMS >&2) || die "sha256sum -c SHA256SUMS failed"
checked "SHA256SUMS: $(wc -l <"$OUTDIR/SHA256SUMS") files, sha256sum -c passes"

# ---- signatures: cosign, with a key pair made for this run, offline ----
# What the release workflow does keyless (Sigstore), done here with a throwaway key pair
# and no transparency log, so that each signature and attestation is made and verified on
# every run: SHA256SUMS signed as a blob; the image pushed to a registry in memory on
# 127.0.0.1 (crane's), signed, with the SBOM and an SLSA provenance attested; all
# verified, and a tampered file and a stranger's key refused.
step "signatures: cosign (a key pair of this run, no transparency log), a registry on 127.0.0.1"
sign_tools=$(bash "$here/build-cosign.sh" | tail -n 1)
cosign="$sign_tools/cosign"
crane="$sign_tools/crane"
signed="$OUTDIR/$signed_dir"
mkdir -p "$signed" "$work/keys" "$work/home"
# No network but 127.0.0.1: a call to Sigstore's services fails at once instead of
# reaching out; no credentials or TUF cache of the user's are read or written.
export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1 \
  DOCKER_CONFIG="$work/home/docker" TUF_ROOT="$work/home/tuf" HOME="$work/home" COSIGN_PASSWORD=
(cd "$work/keys" && "$cosign" generate-key-pair >/dev/null 2>&1 \
  && "$cosign" generate-key-pair --output-key-prefix stranger >/dev/null 2>&1) \
  || die "cosign generate-key-pair failed"
cp "$work/keys/cosign.pub" "$signed/cosign.pub"
key=(--key "$work/keys/cosign.key" --tlog-upload=false --yes)
pub=(--key "$signed/cosign.pub" --insecure-ignore-tlog)
stranger=(--key "$work/keys/stranger.pub" --insecure-ignore-tlog)
refused() { # what, command...: the command must fail
  local what=$1; shift
  if "$@" >"$work/refused.log" 2>&1; then die "cosign accepted $what"; fi
  checked "refused: $what ($(grep -m1 -io 'error:.*' "$work/refused.log" | cut -c1-100))"
}

# SHA256SUMS, as a blob.
"$cosign" sign-blob "${key[@]}" --output-signature "$signed/SHA256SUMS.sig" "$OUTDIR/SHA256SUMS" 2>"$work/cosign.log" \
  || { cat "$work/cosign.log" >&2; die "cosign sign-blob SHA256SUMS failed"; }
"$cosign" verify-blob "${pub[@]}" --signature "$signed/SHA256SUMS.sig" "$OUTDIR/SHA256SUMS" >&2 \
  || die "cosign verify-blob SHA256SUMS failed"
checked "SHA256SUMS: signed ($signed_dir/SHA256SUMS.sig), cosign verify-blob with $signed_dir/cosign.pub passes"
cp "$OUTDIR/SHA256SUMS" "$work/SHA256SUMS.tampered"
printf '%064d  kopf-audit-%s-linux-riscv64\n' 0 "$VERSION" >>"$work/SHA256SUMS.tampered"
refused "a tampered SHA256SUMS" "$cosign" verify-blob "${pub[@]}" --signature "$signed/SHA256SUMS.sig" "$work/SHA256SUMS.tampered"
refused "SHA256SUMS under another key" "$cosign" verify-blob "${stranger[@]}" --signature "$signed/SHA256SUMS.sig" "$OUTDIR/SHA256SUMS"

# The image: into a registry in memory, on a port the kernel picks, stopped on exit.
"$crane" registry serve --address 127.0.0.1:0 >"$work/registry.log" 2>&1 &
registry_pid=$!
trap 'kill "$registry_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
port=
for _ in $(seq 50); do
  port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$work/registry.log")
  [ -n "$port" ] && break
  kill -0 "$registry_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/registry.log" >&2; die "crane registry serve did not start"; }
mkdir -p "$work/layout"
tar -xf "$OUTDIR/$image_file" -C "$work/layout"
archived=$(python3 -c 'import json, sys; [m] = json.load(open(sys.argv[1]))["manifests"]; print(m["digest"])' \
  "$work/layout/index.json") || die "$image_file holds not exactly one manifest"
registry_repo="127.0.0.1:$port/kopf-audit"
"$crane" push "$work/layout" "$registry_repo:$VERSION" --image-refs "$work/pushed" >/dev/null 2>"$work/crane.log" \
  || { cat "$work/crane.log" >&2; die "crane push to $registry_repo failed"; }
image_at=$(cat "$work/pushed")
[ "$image_at" = "$registry_repo@$archived" ] || die "pushed $image_at, but the archive's manifest is $archived"
insecure=(--allow-insecure-registry)

# Its SLSA provenance (v1): this script built it, from this commit, for this version.
python3 - "$work/provenance.json" "$source_url" "$revision" "$VERSION" "$created" <<'EOF'
import json, sys
out, source, revision, version, created = sys.argv[1:]
predicate = {
    "buildDefinition": {
        "buildType": f"{source}/blob/{revision}/hack/release.sh",
        "externalParameters": {"version": version, "source": f"git+{source}@{revision}"},
        "internalParameters": {"signing": "a key pair made for this run, no transparency log"},
        "resolvedDependencies": [{"uri": f"git+{source}", "digest": {"gitCommit": revision}}],
    },
    "runDetails": {
        "builder": {"id": f"{source}/blob/{revision}/hack/release.sh"},
        # No invocationId: cosign's SLSA v1 type (in-toto-golang) re-spells it invocationID.
        "metadata": {"startedOn": created},
    },
}
json.dump(predicate, open(out, "w"), indent=2)
EOF
cp "$work/provenance.json" "$signed/provenance.slsa.json"

"$cosign" sign "${key[@]}" "${insecure[@]}" "$image_at" 2>"$work/cosign.log" \
  || { cat "$work/cosign.log" >&2; die "cosign sign $image_at failed"; }
"$cosign" attest "${key[@]}" "${insecure[@]}" --type cyclonedx --predicate "$OUTDIR/$sbom_file" "$image_at" 2>"$work/cosign.log" \
  || { cat "$work/cosign.log" >&2; die "cosign attest --type cyclonedx failed"; }
"$cosign" attest "${key[@]}" "${insecure[@]}" --type slsaprovenance1 --predicate "$work/provenance.json" "$image_at" 2>"$work/cosign.log" \
  || { cat "$work/cosign.log" >&2; die "cosign attest --type slsaprovenance1 failed"; }

# Verified by the tag, as a user would: each must name the archive's digest.
"$cosign" verify "${pub[@]}" "${insecure[@]}" "$registry_repo:$VERSION" >"$work/verified.json" 2>"$work/cosign.log" \
  || { cat "$work/cosign.log" >&2; die "cosign verify $registry_repo:$VERSION failed"; }
"$cosign" verify-attestation "${pub[@]}" "${insecure[@]}" --type cyclonedx "$registry_repo:$VERSION" \
  >"$work/sbom.att" 2>"$work/cosign.log" || { cat "$work/cosign.log" >&2; die "cosign verify-attestation --type cyclonedx failed"; }
"$cosign" verify-attestation "${pub[@]}" "${insecure[@]}" --type slsaprovenance1 "$registry_repo:$VERSION" \
  >"$work/provenance.att" 2>"$work/cosign.log" || { cat "$work/cosign.log" >&2; die "cosign verify-attestation --type slsaprovenance1 failed"; }
python3 - "$archived" "$work/verified.json" "$work/sbom.att" "$OUTDIR/$sbom_file" "$work/provenance.att" "$work/provenance.json" <<'EOF' \
  || die "what cosign verified is not the archive's image, its SBOM and its provenance"
import base64, json, sys
digest, verified, sbom_att, sbom, prov_att, prov = sys.argv[1:]
[sig] = json.load(open(verified))
assert sig["critical"]["image"]["docker-manifest-digest"] == digest, sig["critical"]
def statement(path):
    [line] = [l for l in open(path) if l.strip()]
    s = json.loads(base64.b64decode(json.loads(line)["payload"]))
    assert [x["digest"]["sha256"] for x in s["subject"]] == [digest.removeprefix("sha256:")], s["subject"]
    return s
s = statement(sbom_att)
assert s["predicateType"] == "https://cyclonedx.org/bom", s["predicateType"]
assert s["predicate"] == json.load(open(sbom)), "the attested SBOM differs from the release's"
p = statement(prov_att)
assert p["predicateType"] == "https://slsa.dev/provenance/v1", p["predicateType"]
assert p["predicate"] == json.load(open(prov)), f"the attested provenance differs: {p['predicate']}"
print(f"[release] ok: {digest}: signature, CycloneDX SBOM ({len(s['predicate'].get('components', []))} "
      f"components, the release's) and SLSA v1 provenance (commit "
      f"{p['predicate']['buildDefinition']['resolvedDependencies'][0]['digest']['gitCommit'][:12]}) verified")
EOF
refused "the image under another key" "$cosign" verify "${stranger[@]}" "${insecure[@]}" "$image_at"
refused "the SBOM attestation under another key" \
  "$cosign" verify-attestation "${stranger[@]}" "${insecure[@]}" --type cyclonedx "$image_at"
kill "$registry_pid" 2>/dev/null || true
wait "$registry_pid" 2>/dev/null || true
log "release $VERSION in $OUTDIR, $((SECONDS - step_start))s:"
(cd "$OUTDIR" && ls -l --time-style=+ | tail -n +2 | awk '{printf "  %12d  %s\n", $5, $NF}') >&2
echo "$OUTDIR"
