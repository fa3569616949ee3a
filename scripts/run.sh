#!/usr/bin/env bash
# Quick start: install what is missing, build tabgate, and start it.
# Usage: scripts/run.sh [tabgate args...]   (default: `mcp`, MCP over stdio)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release -q -p tabgate
exec target/release/tabgate "${@:-mcp}"
