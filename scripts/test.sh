#!/usr/bin/env bash
# Runs every test of the project. Later test suites start their own servers from here.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked "$@"
