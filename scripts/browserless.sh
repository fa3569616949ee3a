#!/usr/bin/env bash
# Outside-CI check (issue 8): tabgate sessions on a real Browserless v2 server.
#
#   scripts/browserless.sh            install Browserless (npm), start it, run the check, stop it
#   scripts/browserless.sh restart    (used by the check) restart the running Browserless
#   scripts/browserless.sh stop       stop it
#
# Browserless comes from the npm registry (@browserless.io/browserless) without its own
# browsers (PUPPETEER_SKIP_DOWNLOAD, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD); the Chromium path it
# expects (playwright-core's) is a symlink to the system Chromium. It serves only the
# chromium routes (ROUTES), listens on 127.0.0.1 with a token, CONCURRENT=2, QUEUED=1,
# TIMEOUT=0. The check itself is crates/server/tests/browserless.rs (an ignored test).
#
# Environment: TABGATE_BROWSERLESS_DIR (default /tmp/tabgate-browserless), BROWSERLESS_PORT
# (default: a free port), BROWSERLESS_TOKEN (default: random), CHROMIUM (/usr/bin/chromium).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${TABGATE_BROWSERLESS_DIR:-/tmp/tabgate-browserless}"
PKG="$WORK/node_modules/@browserless.io/browserless"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
PIDFILE="$WORK/browserless.pid"
LOG="$WORK/browserless.log"

say() { echo "browserless.sh: $*" >&2; }

install() {
    command -v node >/dev/null || { say "node is missing (apt-get install nodejs npm)"; exit 1; }
    [ -x "$CHROMIUM" ] || { say "no Chromium at $CHROMIUM (apt-get install chromium, or set CHROMIUM)"; exit 1; }
    mkdir -p "$WORK"
    if [ ! -f "$PKG/build/index.js" ]; then
        say "installing @browserless.io/browserless into $WORK (npm)"
        [ -f "$WORK/package.json" ] || echo '{"name": "tabgate-browserless-check", "private": true}' >"$WORK/package.json"
        (cd "$WORK" && PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
            npm install --no-audit --no-fund --loglevel=error @browserless.io/browserless >&2)
    fi
    # the Chromium Browserless expects (playwright-core's) is the system one
    export PLAYWRIGHT_BROWSERS_PATH="$WORK/pw-browsers"
    local expected
    expected="$(cd "$PKG" && node -e "import('playwright-core').then(m => console.log(m.default.chromium.executablePath()))")"
    mkdir -p "$(dirname "$expected")"
    ln -sfn "$CHROMIUM" "$expected"
    # only the chromium routes
    mkdir -p "$WORK/routes"
    ln -sfn "$PKG/build/routes/chromium" "$WORK/routes/chromium"
    say "Browserless $(node -p "require('$PKG/package.json').version"), Chromium $("$CHROMIUM" --version 2>/dev/null | head -1) at $expected"
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$BROWSERLESS_PORT") 2>/dev/null; }

start() {
    : >>"$LOG"
    (cd "$PKG" && exec setsid env \
        PLAYWRIGHT_BROWSERS_PATH="$WORK/pw-browsers" ROUTES="$WORK/routes" \
        HOST=127.0.0.1 PORT="$BROWSERLESS_PORT" TOKEN="$BROWSERLESS_TOKEN" \
        CONCURRENT=2 QUEUED=1 TIMEOUT=0 DEBUG="browserless*,-*:trace,-*:verbose" \
        node build/index.js >>"$LOG" 2>&1) &
    echo $! >"$PIDFILE"
    disown $! 2>/dev/null || true
    for _ in $(seq 1 150); do
        if listening; then
            say "Browserless listening on 127.0.0.1:$BROWSERLESS_PORT (pid $(cat "$PIDFILE"), log $LOG)"
            return 0
        fi
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { say "Browserless exited at start:"; tail -20 "$LOG" >&2; exit 1; }
        sleep 0.2
    done
    say "Browserless did not listen within 30 s:"; tail -20 "$LOG" >&2; exit 1
}

stop() {
    [ -f "$PIDFILE" ] || return 0
    local pid; pid="$(cat "$PIDFILE")"
    rm -f "$PIDFILE"
    kill -0 "$pid" 2>/dev/null || return 0
    # its own process group (setsid): Browserless and the browsers it started
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 15); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        listening || return 0
        sleep 0.1
    done
}

case "${1:-check}" in
    restart)
        : "${BROWSERLESS_PORT:?restart needs the BROWSERLESS_PORT of the running server}"
        : "${BROWSERLESS_TOKEN:?restart needs its BROWSERLESS_TOKEN}"
        stop
        start
        echo "restarted"
        ;;
    stop)
        stop
        ;;
    check)
        install
        export BROWSERLESS_PORT="${BROWSERLESS_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
        export BROWSERLESS_TOKEN="${BROWSERLESS_TOKEN:-tg-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
        export TABGATE_BROWSERLESS_DIR="$WORK"
        stop
        trap stop EXIT
        start
        cd "$REPO"
        TABGATE_BROWSERLESS_URL="ws://127.0.0.1:$BROWSERLESS_PORT" \
        TABGATE_BROWSERLESS_TOKEN="$BROWSERLESS_TOKEN" \
        TABGATE_BROWSERLESS_RESTART="'$REPO/scripts/browserless.sh' restart" \
            cargo test -p tabgate-server --test browserless -- --ignored --nocapture --test-threads=1
        ;;
    *)
        echo "usage: $0 [check|restart|stop]" >&2
        exit 2
        ;;
esac
