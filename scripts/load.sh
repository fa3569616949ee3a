#!/usr/bin/env bash
# Load check for `tabgate serve` (not a test): 20 sessions × 50 tool calls in parallel over
# HTTP against one gateway and one Chromium; prints p50/p99 per tool; exits 1 on any error,
# leaked tab or leaked browser process.
# Usage: scripts/load.sh [--sessions N] [--calls M]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
exec cargo bench -q -p tabgate-server --bench load -- "$@"
