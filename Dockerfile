# syntax=docker/dockerfile:1
#
# The kopf-audit operator image: one fully static (glibc) binary on `scratch`, run as
# the numeric non-root user 65532, no shell, no package manager, no other file.
#
#   docker build -t kopf-audit:0.1.0 .
#
# This is the canonical build for real registries. hack/image.sh builds the same
# runtime stage (the `runtime` stage below, read from this file) around the same
# static binary with podman and no registry, and tests/e2e/image.rs runs that image
# hardened exactly as the chart runs it (hack/test.sh does both). hack/image.sh does not
# run the build stages: it compiles the binary on the host with the toolchain that
# rust-toolchain.toml pins, the release of the builder image below.
#
# Why static glibc on scratch:
# - `-C target-feature=+crt-static` on the gnu target links glibc (and everything
#   else) into the binary: no dynamic loader, no libc at runtime, so `scratch` runs
#   it. No musl toolchain is needed, and the allocator is glibc's malloc, measured
#   in BENCHMARKS.md ("The image").
# - The binary needs no file of the image: in a pod the API server's address comes
#   from KUBERNETES_SERVICE_HOST/PORT (an IP, no DNS lookup) and its CA and token from
#   the mounted /var/run/secrets/kubernetes.io/serviceaccount/; it writes no file.
#   Not in the image: CA certificates (only a kubeconfig without a CA would need
#   them), /etc/passwd (the user is numeric, so runAsNonRoot can verify it), time
#   zones (logs are UTC). A host name in a kubeconfig still resolves (tried:
#   `localhost`, through the /etc/hosts the runtime mounts).
# Multi-arch: the build stage runs on the target platform (buildx with QEMU), and the
# gnu target is chosen from `uname -m` (x86_64 or aarch64).
# The release profile (Cargo.toml) has one codegen unit and fat LTO, for the log
# scan's speed: the last build step takes minutes (BENCHMARKS.md, "The image", has
# the timings).

# The builder image, by tag and digest: the tag names the Rust release (the one
# rust-toolchain.toml pins; tests/supply_chain.rs keeps the two equal), the digest the
# exact image, since a tag moves whenever its Debian base is rebuilt. The digest is the
# tag's image index (what `docker buildx imagetools inspect rust:1.95.0-slim-bookworm`
# prints as "Digest"), so that one pin serves both platforms. It was not pulled where
# this repository is tested (no registry there): check it with that command before a
# release build. To move to another release, change the tag and digest here and the
# channel in rust-toolchain.toml in one commit.
ARG RUST_IMAGE=rust:1.95.0-slim-bookworm@sha256:d7482085ff5b415f84dba5647ae71606650bdef00db7aeb69f4b3d170c3e4082

# ---- toolchain: cargo-chef, shared by the next two stages ----
# The slim image has gcc and libc6-dev, whose libc.a the static link uses.
FROM ${RUST_IMAGE} AS chef
RUN cargo install cargo-chef --version 0.1.78 --locked \
 && rm -rf "$CARGO_HOME/registry"
WORKDIR /src

# ---- plan: a recipe of the dependency graph (changes only when manifests change) ----
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# ---- build: dependencies first (a cached layer), then the binary ----
FROM chef AS build
# Static for the target only: build scripts and proc-macros stay host binaries.
ENV RUSTFLAGS="-C target-feature=+crt-static"
COPY --from=planner /src/recipe.json recipe.json
# The recipe carries Cargo.lock: the dependency versions are the locked ones.
RUN cargo chef cook --release --target "$(uname -m)-unknown-linux-gnu" --recipe-path recipe.json
COPY . .
# The source revision for --version and build_info (the context has no .git):
# --build-arg KOPF_AUDIT_REVISION=$(git rev-parse --short=12 HEAD).
ARG KOPF_AUDIT_REVISION=
RUN cargo build --release --locked --target "$(uname -m)-unknown-linux-gnu" --bin kopf-audit \
 && cp "target/$(uname -m)-unknown-linux-gnu/release/kopf-audit" /kopf-audit \
 && if readelf -l /kopf-audit | grep -q INTERP; then echo "not static" >&2; exit 1; fi \
 && /kopf-audit --version

# ---- runtime: the binary alone (hack/image.sh builds this stage as it is) ----
FROM scratch AS runtime
LABEL org.opencontainers.image.title="kopf-audit" \
      org.opencontainers.image.description="Audits Python operators written with kopf" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build --chown=0:0 --chmod=0555 /kopf-audit /kopf-audit
# By number, so that runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
# /metrics, /healthz, /readyz
EXPOSE 8080
ENTRYPOINT ["/kopf-audit", "run"]
