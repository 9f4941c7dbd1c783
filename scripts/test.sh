#!/usr/bin/env bash
# Runs every test of the project: starts the test servers on 127.0.0.1 (installing them when
# missing; see docs/testing.md), runs the whole suite against them, and stops the servers again
# unless they were already running before.
set -euo pipefail
cd "$(dirname "$0")/.."
env_file="$(scripts/servers.sh env)"
started=0
if [ ! -f "$env_file" ]; then
  started=1
fi
# moto (PyPI) is the probe's example of an S3 server that checks no digests.
tools="${MOVERCTL_TOOLS:-$HOME/.cache/moverctl/tools}"
if [ ! -x "$tools/moto/bin/moto_server" ]; then
  python3 -m venv "$tools/moto"
  "$tools/moto/bin/pip" install --quiet 'moto[server]'
fi
# Debian's chromium renders the HTML plan report in a test (tests/it/plan_report.rs); under
# MOVERCTL_REQUIRE_SERVERS=1 that test fails instead of skipping when it is missing.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "== installing Debian's chromium package (for the plan --report test)"
  as_root=""
  if [ "$(id -u)" != 0 ]; then as_root="sudo"; fi
  $as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium
fi
# Debian's Prometheus Pushgateway: `sync --metrics-push` is tested against the real one (the test
# starts and stops its own on a free port).
if ! command -v prometheus-pushgateway >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get install -y -q prometheus-pushgateway >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q prometheus-pushgateway >/dev/null 2>&1; }) ||
    echo "test.sh: could not install prometheus-pushgateway" >&2
fi
scripts/servers.sh start
if [ "$started" = 1 ]; then
  trap 'scripts/servers.sh stop >/dev/null 2>&1 || true' EXIT
fi
# shellcheck disable=SC1090
source "$env_file"
export MOVERCTL_REQUIRE_SERVERS=1
# A single-node Slurm cluster for the scale-out tests (tests/it/slurm.rs); stopped at the end
# when this script started it.
slurm_env="$(scripts/slurm.sh env)"
slurm_started=0
[ -f "$slurm_env" ] && pgrep -F "$(dirname "$slurm_env")/slurmctld.pid" >/dev/null 2>&1 || slurm_started=1
scripts/slurm.sh start
if [ "$slurm_started" = 1 ]; then
  trap 'scripts/slurm.sh stop >/dev/null 2>&1 || true; [ "$started" = 1 ] && scripts/servers.sh stop >/dev/null 2>&1 || true' EXIT
fi
# shellcheck disable=SC1090
source "$slurm_env"
export MOVERCTL_REQUIRE_SLURM=1
cargo test --locked "$@"
