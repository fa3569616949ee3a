#!/usr/bin/env bash
# Installs what tabgate needs on a Debian machine: Chromium (Debian's `chromium` package)
# when no browser is found. The Rust toolchain (rustup) must already be there.
# Idempotent; prints what it does.
set -euo pipefail
if [[ -z "${TABGATE_BROWSER:-}" ]] && ! command -v chromium >/dev/null 2>&1 && [[ ! -x /usr/bin/chromium ]]; then
  echo "tabgate: installing Chromium (apt-get install chromium)" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "tabgate: run as root or install sudo to install Chromium" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "tabgate: cargo not found; install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
