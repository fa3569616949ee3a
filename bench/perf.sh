#!/usr/bin/env bash
# Issue 9's benchmark: tabgate vs @playwright/mcp and chrome-devtools-mcp on the same work,
# plus tabgate's supervisor benches, summed up in one table (bench/perf_report.py).
#
#   bench/perf.sh                      # everything (~10 min on 2 idle cores)
#   bench/perf.sh --wait-quiet 240     # wait longer for an idle CPU before each scenario
#   bench/perf.sh --rev HEAD           # measure a commit (clean `git archive` export), not the work tree
#   bench/perf.sh --report DIR         # only print the table of an earlier run
#
# Steps: copy the shared harness (../shared/bench/peers) to $PEERS (default /tmp/peers; keep it
# short, Chromium's profile socket path is limited) and run its setup.sh; build tabgate and the
# supervisor bench in release into $CARGO_TARGET_DIR (default /tmp/tg-target, apart from the
# repo's target/); run harness.py for playwright, devtools and adapters/tabgate.py one after
# the other; run crates/tools/examples/supervisor_bench.rs; print the table. Results go to
# $OUT (default /tmp/tabgate-perf/<UTC stamp>), never into the repo; the table is also
# written to $OUT/table.md.
#
# Options: --wait-quiet N (default 120), --peers DIR, --out DIR, --rev REV, --skip-harness,
# --skip-supervisor, --s1-reps N, --s8-reps N, --report DIR.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${PEERS:-/tmp/peers}
PEERS_SRC=${PEERS_SRC:-$REPO/../shared/bench/peers}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/tg-target}
OUT=${OUT:-/tmp/tabgate-perf/$(date -u +%Y%m%dT%H%M%SZ)}
WAIT=120
S1_REPS=10
S8_REPS=5
HARNESS=1
SUPERVISOR=1
REPORT_ONLY=
REV=

while [[ $# -gt 0 ]]; do
  case "$1" in
    --wait-quiet) WAIT=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --rev) REV=$2; shift 2 ;;
    --s1-reps) S1_REPS=$2; shift 2 ;;
    --s8-reps) S8_REPS=$2; shift 2 ;;
    --skip-harness) HARNESS=; shift ;;
    --skip-supervisor) SUPERVISOR=; shift ;;
    --report) REPORT_ONLY=1; OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

PY=$PEERS/venv/bin/python
export TIKTOKEN_CACHE_DIR=$PEERS/tiktoken_cache
report() {
  "$PY" "$REPO/bench/perf_report.py" --harness "$OUT/harness" --supervisor "$OUT/supervisor.json" \
    --peers "$PEERS" --markdown "$OUT/table.md"
}
if [[ -n $REPORT_ONLY ]]; then report; exit; fi

case "$OUT" in "$REPO"|"$REPO"/*) echo "--out must be outside the repo" >&2; exit 2 ;; esac
if (( ${#PEERS} > 24 )); then
  echo "warning: $PEERS is long; Chromium fails when its profile path passes ~100 bytes" >&2
fi
mkdir -p "$OUT"
echo "== $(date -u +%FT%TZ)  loadavg $(cut -d' ' -f1-3 /proc/loadavg)  results in $OUT"

# 1. the harness copy (scripts refreshed from the shared copy; results and installs kept)
if [[ -n $HARNESS || ! -x $PY ]]; then
  [[ -d $PEERS_SRC ]] || { echo "no harness at $PEERS_SRC (set PEERS_SRC)" >&2; exit 1; }
  mkdir -p "$PEERS"
  for f in "$PEERS_SRC"/* "$PEERS_SRC"/.gitignore; do
    case ${f##*/} in results|run|node_modules|venv|tiktoken_cache) continue ;; esac
    cp -r -u --preserve=timestamps "$f" "$PEERS/"
    chmod -R u+w "$PEERS/${f##*/}"
  done
  (cd "$PEERS" && ./setup.sh)
fi

# 2. release builds, before any measurement: the work tree, or with --rev a clean export
SRC=$REPO
if [[ -n $REV ]]; then
  SRC=$OUT/src
  rm -rf "$SRC" && mkdir -p "$SRC"
  git -C "$REPO" archive --format=tar "$REV" | tar -x -C "$SRC"
  echo "== measuring $(git -C "$REPO" rev-parse --short "$REV") ($(git -C "$REPO" log -1 --format=%s "$REV" | cut -c1-70))"
else
  echo "== measuring the work tree of $REPO (HEAD $(git -C "$REPO" rev-parse --short HEAD)$([[ -z $(git -C "$REPO" status --porcelain -- crates Cargo.toml Cargo.lock) ]] || echo ', with uncommitted changes'))"
fi
echo "== building (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
(cd "$SRC" && cargo build --release -q -p tabgate \
  && cargo build --release -q -p tabgate-tools --example supervisor_bench)
TABGATE=$CARGO_TARGET_DIR/release/tabgate
BENCH=$CARGO_TARGET_DIR/release/examples/supervisor_bench

# 3. the harness, the three servers in one go (same pages, same scenarios, same machine)
if [[ -n $HARNESS ]]; then
  for ad in playwright devtools adapters/tabgate.py; do
    args=(--adapter "$ad" --out "$OUT/harness" --wait-quiet "$WAIT" --s1-reps "$S1_REPS" --s8-reps "$S8_REPS")
    [[ $ad == adapters/tabgate.py ]] && args+=(--cmd "$TABGATE")
    echo "== harness: $ad"
    (cd "$PEERS" && "$PY" harness.py "${args[@]}") 2>&1 | tee -a "$OUT/harness.log"
  done
fi

# 4. supervisor benches (one headless Chromium, loopback pages)
if [[ -n $SUPERVISOR ]]; then
  echo "== supervisor benches"
  quiet=$("$PY" "$REPO/bench/perf_report.py" quiet "$WAIT")
  echo "   before: $quiet"
  "$BENCH" --out "$OUT/supervisor.json" 2>&1 | tee "$OUT/supervisor.log"
  "$PY" - "$OUT/supervisor.json" "$quiet" <<'EOF'
import json, sys
p, q = sys.argv[1], json.loads(sys.argv[2])
d = json.load(open(p)); d["cpu_idle_before"] = q["cpu_idle"]; d["waited_for_quiet_s"] = q["waited_s"]
json.dump(d, open(p, "w"), indent=1)
EOF
fi

# 5. the table
echo
echo "== $(date -u +%FT%TZ)  loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
report
