#!/usr/bin/env bash
# Builds the moverctl container image from ./Dockerfile.
#
#   scripts/docker-build.sh [IMAGE]          # default moverctl:COMMIT, also tagged moverctl:latest
#   scripts/docker-build.sh --binary-only    # no container builder: build and check what the
#                                            # image would package, as tests/it/habits.rs does
#
# The commit goes in as MOVERCTL_GIT_COMMIT (the builder gets no .git), so `moverctl --version`
# in the image names it. Needs docker (or podman with a docker alias) with a running daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "${1:-}" = "--binary-only" ]; then
  # The Dockerfile's build step, then its entrypoint with --version.
  MOVERCTL_GIT_COMMIT="$commit" cargo build --release --locked --bin moverctl
  exec target/release/moverctl --version
fi
image="${1:-moverctl:$commit}"
if ! docker info >/dev/null 2>&1; then
  echo "docker-build: no container daemon reachable (docker info failed); on a machine without one," >&2
  echo "run scripts/docker-build.sh --binary-only to build and check the binary the image packages" >&2
  exit 1
fi
docker build --build-arg "MOVERCTL_GIT_COMMIT=$commit" -t "$image" -t moverctl:latest .
docker run --rm "$image" --version
