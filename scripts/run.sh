#!/usr/bin/env bash
# Quick start: install what is missing, build tabgate, and start it.
# Usage: scripts/run.sh [tabgate args...]
#   default: `serve` — the gateway on http://127.0.0.1:7878 (HTTP API /v1, MCP at /mcp);
#   `scripts/run.sh mcp` serves MCP over stdio instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release -q -p tabgate
exec "${CARGO_TARGET_DIR:-target}/release/tabgate" "${@:-serve}"
