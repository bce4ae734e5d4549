# syntax=docker/dockerfile:1
# Two images from one build, from the repository root:
#
#   docker build -t hintaudit/bookings:0.1.0 .
#     the bookings example, audited by hintaudit, plus the `hintaudit` command (its `traffic`
#     subcommand drives the compose stack): the last stage, the default target;
#   docker build --target hintaudit -t hintaudit/hintaudit:0.1.0 .
#     `hintaudit` alone, for `hintaudit proxy` as a sidecar (deploy/proxy-sidecar) and
#     `hintaudit verify` in a pipeline. The release workflow builds this target from its
#     release binary instead, replacing the build stage (`--build-context build=DIR`, DIR
#     holding out/hintaudit): nothing compiles there.
#
# The cargo line below is the one .ci/run runs, word for word (a test checks it), so CI
# proves that this image's binaries build from the committed Cargo.lock.

FROM rust:1.94-bookworm AS build
WORKDIR /src
COPY . .
# The caches keep the registry and target directory between `docker compose up --build` runs;
# target/ is a cache mount, so the binaries are copied out in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p bookings -p hintaudit-cli \
    && mkdir -p /out \
    && cp target/release/bookings target/release/hintaudit /out/

# hintaudit alone: no shell, no package manager; glibc and CA certificates from distroless.
FROM gcr.io/distroless/cc-debian12:nonroot AS hintaudit
COPY --from=build /out/hintaudit /usr/local/bin/hintaudit
# Numeric (distroless's nonroot), so that Kubernetes' runAsNonRoot can check it.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hintaudit"]
CMD ["--help"]

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 bookings \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/bookings --create-home bookings
COPY --from=build /out/bookings /out/hintaudit /usr/local/bin/
# Numeric, so that Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
USER 10001:10001
WORKDIR /var/lib/bookings
EXPOSE 8080
ENTRYPOINT ["bookings"]
CMD ["--http", "0.0.0.0:8080", "--audit"]
