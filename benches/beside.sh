#!/usr/bin/env bash
# A lone client's round trips beside a loaded server, builds compared: per round and
# build, a fresh `orchestrata up` (sled, default fsync), `wsload pipe` pipelining as
# background load, and `wsload rtt` one at a time beside it from its own connection
# (p50, p99, p99.9, max of `cxp.send`). Builds alternate, so a machine whose speed
# drifts slows them alike. What a stall on the write path (a view's commit, a
# renewal) costs a client shows in p99.9 and max, not in throughput.
#
#   benches/beside.sh BIN_A BIN_B [BIN_C ...]
#
# Knobs (environment): ROUNDS (2), CONNS (4) and WINDOW (16) of the background load,
# COUNT (3000) round trips measured, WSLOAD (the wsload example, default
# $CARGO_TARGET_DIR/release/examples/wsload), OUT (kept directory with each server's
# log). max_clients, the per-client rate limit and the inbox are raised, as in
# benches/ab.sh.
set -uo pipefail

[ $# -ge 2 ] || { sed -n '2,15p' "$0"; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-2}; CONNS=${CONNS:-4}; WINDOW=${WINDOW:-16}; COUNT=${COUNT:-3000}
W=$(realpath "${WSLOAD:-${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/wsload}") || exit 2
T=$(mktemp -d /tmp/beside.XXXXXX)
OUT=${OUT:-$T/out}; mkdir -p "$OUT"
UP_PID=""; LOAD_PID=""
cleanup() {
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
  [ -n "$UP_PID" ] && kill "$UP_PID" 2>/dev/null
  rm -rf "$T/data"
}
trap cleanup EXIT

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_health() { for _ in $(seq 1 600); do curl -fs "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
export GATEWAY_TOKEN="beside-$RANDOM$RANDOM"

for r in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    name=$(basename "$bin")
    rm -rf "$T/data"
    p=$(port)
    ORCHESTRATA_GATEWAY__MAX_CLIENTS=1000 \
      ORCHESTRATA_GATEWAY__RATE_LIMIT_PER_SECOND=1000000 ORCHESTRATA_KERNEL__INBOX_CAPACITY=100000000 \
      "$bin" up --data-dir "$T/data" --listen "127.0.0.1:$p" >"$OUT/up-$name-$r.log" 2>&1 &
    UP_PID=$!
    wait_health "$p" || { echo "$name did not start; see $OUT/up-$name-$r.log"; exit 2; }
    # Long enough to outlast the measured round trips; stopped once they are done.
    "$W" pipe "ws://127.0.0.1:$p/" --conns "$CONNS" --window "$WINDOW" --secs 600 \
      >"$OUT/load-$name-$r.out" 2>&1 &
    LOAD_PID=$!
    sleep 3
    out=$("$W" rtt "ws://127.0.0.1:$p/" --count "$COUNT" 2>"$OUT/rtt-$name-$r.err")
    kill "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null; LOAD_PID=""
    kill -INT "$UP_PID"; wait "$UP_PID" 2>/dev/null; UP_PID=""
    pick() { sed -n "s/^$1=//p" <<<"$out"; }
    [ -n "$(pick send_p50_ms)" ] || { echo "$name round $r: no round trips ($out)"; exit 1; }
    echo "round=$r build=$name send_p50_ms=$(pick send_p50_ms) send_p99_ms=$(pick send_p99_ms) send_p999_ms=$(pick send_p999_ms) send_max_ms=$(pick send_max_ms) errors=$(pick errors)"
  done
done
