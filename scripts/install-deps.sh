#!/usr/bin/env bash
# Installs what tabgate needs on a Debian machine: Chromium (Debian's `chromium` package)
# and, if missing, the Rust toolchain is expected to be present already (rustup).
# Idempotent; prints what it does.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 && [[ ! -x /usr/bin/chromium ]]; then
  echo "tabgate: installing Chromium (apt-get install chromium)" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "tabgate: cargo not found; install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
