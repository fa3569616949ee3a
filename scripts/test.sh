#!/usr/bin/env bash
# Runs every test: installs Chromium if missing, then the whole workspace's tests
# (unit tests and end-to-end tests against real headless Chromium on loopback).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo test --workspace "$@"
