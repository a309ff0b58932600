#!/usr/bin/env bash
# Builds the operator image here, with no registry and no Docker: the fully static
# (glibc, crt-static) release binary, put into the Dockerfile's own `runtime` stage
# (FROM scratch, user 65532) by podman, tagged localhost/kopf-audit:<version>, and
# saved as an OCI archive. tests/e2e/image.rs loads that archive and runs it hardened
# as the chart runs it; hack/test.sh calls this script first.
#
# Cached outside the clone, so a fresh clone (CI) does not start over:
#   $KOPF_AUDIT_CACHE/cargo-target-image/   cargo's target dir for this build: the
#                                           dependencies compile once per machine
#   $KOPF_AUDIT_CACHE/image-<key>/          the archive, the binary, image.env; <key>
#                                           hashes the toolchain, the flags, this
#                                           script, the Dockerfile and every input
#                                           of the binary (manifests, lock, sources)
#   $KOPF_AUDIT_CACHE/podman-build/         podman's storage for the build
# Timings (2 cores) are in BENCHMARKS.md ("The image"). Needs podman and runc
# (`apt-get install -y podman runc`; hack/test.sh installs them).
#
# Prints the OCI archive's path on its last line of stdout; progress goes to stderr.
# Environment: KOPF_AUDIT_CACHE (default ~/.cache/kopf-audit).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache_root=${KOPF_AUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kopf-audit}
TARGET=x86_64-unknown-linux-gnu
PROFILE=release
STATIC_RUSTFLAGS="-C target-feature=+crt-static"
IMAGE=localhost/kopf-audit

log() { echo "[image $(date +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v podman >/dev/null || die "podman is missing: apt-get install -y podman runc (hack/test.sh does it)"
command -v runc >/dev/null || die "runc is missing: apt-get install -y runc (crun does not work here)"

# The pinned toolchain (rust-toolchain.toml), without a download.
bash "$here/rust-toolchain.sh" >/dev/null

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
[ -n "$version" ] || die "no version in Cargo.toml"

# The cache key: everything the binary and the image are made of.
key=$(
  cd "$repo"
  {
    rustc -vV
    cargo -V
    echo "$TARGET $PROFILE $STATIC_RUSTFLAGS"
    sha256sum hack/image.sh Dockerfile
    find Cargo.toml Cargo.lock src crates -type f \
      -not -path '*/target/*' -not -name '*.orig' 2>/dev/null | LC_ALL=C sort | xargs sha256sum
  } | sha256sum | cut -c1-16
)
out="$cache_root/image-$key"
archive="$out/kopf-audit-image.oci.tar"

if [ -f "$archive" ] && [ -f "$out/image.env" ]; then
  log "cached: $archive ($(grep -E '^(IMAGE_REF|IMAGE_SIZE_BYTES)=' "$out/image.env" | tr '\n' ' '))"
  echo "$archive"
  exit 0
fi

target_dir="$cache_root/cargo-target-image"
log "building the static binary (profile $PROFILE, $TARGET, $STATIC_RUSTFLAGS) in $target_dir"
log "  cold: dependencies, then fat LTO over one codegen unit (see BENCHMARKS.md for the minutes)"
start=$SECONDS
(cd "$repo" && CARGO_TARGET_DIR="$target_dir" RUSTFLAGS="$STATIC_RUSTFLAGS" \
  cargo build --locked --profile "$PROFILE" --target "$TARGET" --bin kopf-audit)
bin="$target_dir/$TARGET/$PROFILE/kopf-audit"
[ -x "$bin" ] || die "cargo built no $bin"
build_s=$((SECONDS - start))
if readelf -l "$bin" | grep -q INTERP; then
  die "$bin has a program interpreter: it is not static and cannot run FROM scratch"
fi
log "binary: $("$bin" --version), $(stat -c %s "$bin") bytes, static (no PT_INTERP), built in ${build_s}s"

mkdir -p "$out.tmp"
rm -rf "${out:?}.tmp/"*
ctx="$out.tmp/context"
mkdir -p "$ctx"
cp "$bin" "$ctx/kopf-audit"
# The Dockerfile's runtime stage as it is, its binary taken from this context
# instead of the build stage.
awk '/^FROM scratch AS runtime/ {on = 1} on' "$repo/Dockerfile" \
  | sed 's|^COPY --from=build \(.*\) /kopf-audit /kopf-audit$|COPY \1 kopf-audit /kopf-audit|' \
  > "$ctx/Containerfile"
grep -q '^COPY .* kopf-audit /kopf-audit$' "$ctx/Containerfile" \
  || die "the Dockerfile's runtime stage has no 'COPY --from=build ... /kopf-audit /kopf-audit' line to adapt"

store="$cache_root/podman-build"
mkdir -p "$store"
podman_() {
  podman --root "$store/root" --runroot "$store/runroot" --tmpdir "$store/tmp" \
    --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
}
log "podman build of the Dockerfile's runtime stage (FROM scratch), tag $IMAGE:$version"
podman_ build --quiet --network=none --pull=never --layers=false \
  -t "$IMAGE:$version" -t "$IMAGE:$key" -f "$ctx/Containerfile" "$ctx" >"$out.tmp/image-id"
size=$(podman_ image inspect --format '{{.Size}}' "$IMAGE:$version")
log "image $IMAGE:$version: id $(cut -c1-12 "$out.tmp/image-id"), $size bytes"
podman_ save --quiet --format oci-archive -o "$out.tmp/kopf-audit-image.oci.tar" "$IMAGE:$version"
cp "$bin" "$out.tmp/kopf-audit"
cat >"$out.tmp/image.env" <<EOF
IMAGE_REF=$IMAGE:$version
IMAGE_ID=$(cat "$out.tmp/image-id")
IMAGE_SIZE_BYTES=$size
BINARY_SIZE_BYTES=$(stat -c %s "$bin")
BUILD_SECONDS=$build_s
KEY=$key
EOF
rm -rf "$out.tmp/context" "$out"
mv "$out.tmp" "$out"
# Keep the three newest images; the storage keeps only what the cache names.
ls -1dt "$cache_root"/image-* 2>/dev/null | grep -v '\.tmp$' | tail -n +4 | while read -r old; do
  log "removing the older cached image $old"
  podman_ rmi -f "$IMAGE:${old##*/image-}" >/dev/null 2>&1 || true
  rm -rf "$old"
done
log "saved $archive ($(stat -c %s "$archive") bytes)"
echo "$archive"
