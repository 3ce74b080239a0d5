#!/usr/bin/env bash
# Builds compared through the public API: alternating rounds, a fresh `orchestrata up`
# (sled, default fsync) per round and per build, so that a machine whose speed drifts
# (this one's drifted by a quarter within an hour) slows both builds alike.
#
#   benches/ab.sh BIN_A BIN_B [BIN_C ...]
#
# MODE=pipe (default): `wsload pipe`; reports acknowledged sends/s and the server's
#   CPU per acknowledged send, each build's means, and each later build against the
#   first round by round (median ratio of acknowledged sends/s, rounds ahead).
# MODE=beside: `wsload pipe` pipelining as background load (CONNS, default 4 here, and
#   WINDOW, 16) and `wsload rtt` one at a time beside it from its own connection
#   (COUNT round trips, 3000); reports `cxp.send` p50, p99, p99.9 and max. What a
#   stall on the write path (a view's commit, a renewal) costs a client shows there,
#   not in throughput.
#
# Knobs (environment): ROUNDS (4), CONNS (1), SECS (20), WSLOAD (the wsload example,
# default $CARGO_TARGET_DIR/release/examples/wsload), INBOX (kernel.inbox_capacity,
# default 100000000: every send delivered; nobody reads the recipient's inbox, so with
# the server's default 10,000 each later send is refused and makes twice the events),
# OUT (kept directory with each server's log).
# max_clients and the per-client rate limit are raised, as in benches/frontdoor.sh.
set -uo pipefail

[ $# -ge 2 ] || { sed -n '2,22p' "$0"; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${MODE:-pipe}
case "$MODE" in
  pipe) CONNS=${CONNS:-1} ;;
  beside) CONNS=${CONNS:-4}; WINDOW=${WINDOW:-16}; COUNT=${COUNT:-3000} ;;
  *) echo "MODE is pipe or beside, not $MODE"; exit 2 ;;
esac
ROUNDS=${ROUNDS:-4}; SECS=${SECS:-20}; INBOX=${INBOX:-100000000}
W=$(realpath "${WSLOAD:-${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/wsload}") || exit 2
T=$(mktemp -d /tmp/ab.XXXXXX)
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
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
export GATEWAY_TOKEN="ab-$RANDOM$RANDOM"

# One pipelining round against the server on port $1: its figures, and the sums.
declare -A sum_rate sum_cpu rates
pipe_round() {
  local t0 t1 out rate errors cpu_us
  t0=$(ticks "$UP_PID")
  out=$("$W" pipe "ws://127.0.0.1:$1/" --conns "$CONNS" --secs "$SECS" 2>"$OUT/wsload-$name-$r.err")
  t1=$(ticks "$UP_PID")
  rate=$(sed -n 's/^acked_per_s=//p' <<<"$out")
  errors=$(sed -n 's/^errors=//p' <<<"$out")
  [ -n "$rate" ] && [ "$rate" -gt 0 ] || { echo "$name round $r: no sends acknowledged ($out)"; return 1; }
  cpu_us=$(( (t1 - t0) * 1000000 / hz / (rate * SECS) ))
  echo "round=$r build=$name acked_per_s=$rate errors=$errors server_cpu_us_per_send=$cpu_us"
  rates[$name:$r]=$rate
  sum_rate[$name]=$(( ${sum_rate[$name]:-0} + rate ))
  sum_cpu[$name]=$(( ${sum_cpu[$name]:-0} + cpu_us ))
}

# One lone client's round trips beside pipelining load, against the server on port $1.
beside_round() {
  local out
  # Long enough to outlast the measured round trips; stopped once they are done.
  "$W" pipe "ws://127.0.0.1:$1/" --conns "$CONNS" --window "$WINDOW" --secs 600 \
    >"$OUT/load-$name-$r.out" 2>&1 &
  LOAD_PID=$!
  sleep 3
  out=$("$W" rtt "ws://127.0.0.1:$1/" --count "$COUNT" 2>"$OUT/rtt-$name-$r.err")
  kill "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null; LOAD_PID=""
  pick() { sed -n "s/^$1=//p" <<<"$out"; }
  [ -n "$(pick send_p50_ms)" ] || { echo "$name round $r: no round trips ($out)"; return 1; }
  echo "round=$r build=$name send_p50_ms=$(pick send_p50_ms) send_p99_ms=$(pick send_p99_ms) send_p999_ms=$(pick send_p999_ms) send_max_ms=$(pick send_max_ms) errors=$(pick errors)"
}

for r in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    name=$(basename "$bin")
    rm -rf "$T/data"
    p=$(port)
    ORCHESTRATA_GATEWAY__MAX_CLIENTS=1000 \
      ORCHESTRATA_GATEWAY__RATE_LIMIT_PER_SECOND=1000000 ORCHESTRATA_KERNEL__INBOX_CAPACITY="$INBOX" \
      "$bin" up --data-dir "$T/data" --listen "127.0.0.1:$p" >"$OUT/up-$name-$r.log" 2>&1 &
    UP_PID=$!
    wait_health "$p" || { echo "$name did not start; see $OUT/up-$name-$r.log"; exit 2; }
    "${MODE}_round" "$p"; ok=$?
    kill -INT "$UP_PID"; wait "$UP_PID" 2>/dev/null; UP_PID=""
    [ "$ok" -eq 0 ] || exit 1
  done
done
[ "$MODE" = pipe ] || exit 0
for bin in "$@"; do
  name=$(basename "$bin")
  echo "mean build=$name acked_per_s=$(( sum_rate[$name] / ROUNDS )) server_cpu_us_per_send=$(( sum_cpu[$name] / ROUNDS ))"
done
# Each later build against the first, round by round: the two ran minutes apart, so
# their ratio drifts less than either rate. The median ratio and the rounds ahead.
first=$(basename "$1")
for bin in "${@:2}"; do
  name=$(basename "$bin")
  for r in $(seq 1 "$ROUNDS"); do
    echo "${rates[$name:$r]} ${rates[$first:$r]}"
  done | awk '{ printf "%.6f %d\n", $1 / $2, ($1 > $2) }' | sort -n \
    | awk -v name="$name" -v first="$first" '
      { ratio[NR] = $1; ahead += $2 }
      END {
        median = (NR % 2) ? ratio[(NR + 1) / 2] : (ratio[NR / 2] + ratio[NR / 2 + 1]) / 2
        printf "paired build=%s against=%s median_ratio=%.3f ahead=%d/%d\n", name, first, median, ahead, NR
      }'
done
