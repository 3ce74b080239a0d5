#!/usr/bin/env bash
# Throughput against history on one live server: a release `orchestrata up` (sled,
# defaults, its own temp dir), then ROUNDS consecutive rounds of SECS seconds of
# `wsload pipe --conns CONNS` (real WebSocket clients in their own process); prints each
# round's acknowledged sends/s, the sends so far, the server's resident memory and the
# sizes on disk of its log (`data/db`) and view store (`data/views`).
#
#   BIN=target/release/orchestrata WSLOAD=target/release/examples/wsload \
#     ROUNDS=5 SECS=20 CONNS=4 benches/decay.sh
set -u
BIN=$(realpath "${BIN:-${CARGO_TARGET_DIR:-target}/release/orchestrata}")
W=$(realpath "${WSLOAD:-${CARGO_TARGET_DIR:-target}/release/examples/wsload}")
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-20}; CONNS=${CONNS:-4}
T=$(mktemp -d); trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$T"' EXIT
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
GATEWAY_TOKEN=decay ORCHESTRATA_GATEWAY__MAX_CLIENTS=1000 \
  ORCHESTRATA_GATEWAY__RATE_LIMIT_PER_SECOND=1000000 \
  "$BIN" up --listen "127.0.0.1:$P" --data-dir "$T/data" >"$T/up.log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do curl -fs "http://127.0.0.1:$P/health" >/dev/null 2>&1 && break; sleep 0.2; done
total=0
for r in $(seq 1 "$ROUNDS"); do
  out=$("$W" pipe "ws://127.0.0.1:$P/" --token decay --conns "$CONNS" --secs "$SECS" 2>/dev/null)
  acked=$(sed -n 's/^acked=//p' <<<"$out"); rate=$(sed -n 's/^acked_per_s=//p' <<<"$out")
  total=$((total + ${acked:-0}))
  mb() { echo $(( $(du -sk "$1" 2>/dev/null | cut -f1) / 1024 )); }
  echo "round=$r acked_per_s=$rate sends_so_far=$total rss_mb=$(( $(ps -o rss= -p $PID) / 1024 )) log_mb=$(mb "$T/data/db") views_mb=$(mb "$T/data/views")"
done
