# syntax=docker/dockerfile:1
# The bookings example, audited by hintaudit, plus the `hintaudit` command (its `traffic`
# subcommand drives the compose stack). Build from the repository root:
#
#   docker build -t hintaudit/bookings:0.1.0 .
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
