#!/usr/bin/env bash
# Runs every test: installs Chromium if missing, then the whole workspace's tests
# (unit tests and end-to-end tests against real headless Chromium on loopback), and the
# console's JS tests with Node's test runner (`node --test web/`; skipped without Node).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo test --workspace "$@"
if [[ -z "${TABGATE_NODE_TESTS_DONE:-}" ]]; then
  if command -v node >/dev/null 2>&1; then
    node --test web/
  else
    echo "tabgate: node not found; skipping the console's JS tests (apt-get install nodejs)" >&2
  fi
fi
