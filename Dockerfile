# syntax=docker/dockerfile:1
# moverctl in a small image: built with the Rust toolchain in a builder stage, shipped on
# distroless "cc" (glibc, CA certificates, tzdata: set TZ for --bwlimit timetables, UTC otherwise; no shell, no package
# manager: about 25 MB with the binary), running as the non-root user `nonroot` (65532).
# Build it with scripts/docker-build.sh (it passes the git commit for `moverctl --version`).
# The Kubernetes examples (examples/cold-mirror/cronjob.yaml) use this image.

FROM rust:1.89-bookworm AS build
# .git is not sent to the builder (.dockerignore): the commit comes in as a build argument and
# reaches build.rs as an environment variable.
ARG MOVERCTL_GIT_COMMIT=unknown
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin moverctl

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/moverctl /usr/local/bin/moverctl
# The journal and lock live in the state folder: mount a persistent volume here.
ENV MOVERCTL_STATE_DIR=/state
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/moverctl"]
CMD ["--help"]
