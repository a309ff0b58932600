# syntax=docker/dockerfile:1
#
# The kopf-audit operator image: a static (musl) binary on distroless, run as the
# numeric non-root user 65532, no shell, no package manager.
#
#   docker build -t kopf-audit:0.1.0 .
#
# NOT BUILT HERE: the development machines have no container runtime, so this file is
# reviewed, not exercised, by hack/test.sh. Build it once wherever Docker or BuildKit
# runs before publishing, and replace the digest placeholders below with the digests
# you pulled (`docker buildx imagetools inspect <image:tag>`): a tag alone can move.
#
# Why these bases:
# - rust:1.95-slim-bookworm builds; musl-tools gives the static C toolchain `ring`
#   (rustls' crypto) needs, so the binary links nothing at runtime.
# - gcr.io/distroless/static-debian12:nonroot runs it: CA certificates, /etc/passwd
#   with nonroot=65532, no shell or libc (cc-debian12 would only be needed for a
#   glibc binary).
# Multi-arch: the build stage runs on the target platform (buildx with QEMU), and
# the musl target is chosen from `uname -m` (x86_64 or aarch64).
# The release profile (Cargo.toml) has one codegen unit and fat LTO, for the log
# scan's speed: the last build step takes minutes (about 10 from scratch on 2 vCPUs
# natively; longer under QEMU).

# Digest placeholders: pin to the digest of the tag you reviewed, e.g.
#   rust:1.95-slim-bookworm@sha256:<digest>
#   gcr.io/distroless/static-debian12:nonroot@sha256:<digest>
ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

# ---- toolchain: the musl target and cargo-chef, shared by the next two stages ----
FROM ${RUST_IMAGE} AS chef
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add "$(uname -m)-unknown-linux-musl" \
 && cargo install cargo-chef --version 0.1.78 --locked \
 && rm -rf "$CARGO_HOME/registry"
WORKDIR /src

# ---- plan: a recipe of the dependency graph (changes only when manifests change) ----
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# ---- build: dependencies first (a cached layer), then the binary ----
FROM chef AS build
COPY --from=planner /src/recipe.json recipe.json
# The recipe carries Cargo.lock: the dependency versions are the locked ones.
RUN cargo chef cook --release --target "$(uname -m)-unknown-linux-musl" --recipe-path recipe.json
COPY . .
RUN cargo build --release --locked --target "$(uname -m)-unknown-linux-musl" --bin kopf-audit \
 && cp "target/$(uname -m)-unknown-linux-musl/release/kopf-audit" /kopf-audit \
 && /kopf-audit --version

# ---- runtime: the binary alone ----
FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="kopf-audit" \
      org.opencontainers.image.description="Audits Python operators written with kopf" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build --chown=0:0 --chmod=0555 /kopf-audit /kopf-audit
# distroless' nonroot, by number so that runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
# /metrics, /healthz, /readyz
EXPOSE 8080
ENTRYPOINT ["/kopf-audit", "run"]
