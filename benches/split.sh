#!/usr/bin/env bash
# REQ-014-024
# Split roles on Kafka (issue 15, item 6): a packet sent through gateway A reaches a
# `cxp.subscribe` subscriber on gateway B. One private Apache Kafka broker
# (tests/kafka/kafka.sh); one `up --role
# kernel`, one `up --role projector` and two `up --role gateway` processes on it; the
# project's `wsload fanout` in its own process, publishing on A (`--publish-url`) and
# subscribing on B. For comparison the same shape then runs against one `up --kafka`
# (all roles in one process) on a fresh topic prefix of the same broker.
#
#   benches/split.sh                         # build release, run, print both reports
#   SKIP_BUILD=1 BIN=… WSLOAD=… benches/split.sh
#
# Knobs (environment): RATE (200 packets/s offered), SUBS (10 subscribers), SECS (10),
# OUT (directory kept with every process's log; the broker's is kafka/node-1/broker.log
# beside it). Delivery latency is the publisher's send instant to the first receipt
# at each subscriber, both in wsload's process (one clock).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
RATE=${RATE:-200}; SUBS=${SUBS:-10}; SECS=${SECS:-10}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cargo build --release --bin orchestrata || exit 2
  cargo build --release --example wsload || exit 2
fi
BIN=$(realpath "${BIN:-$CARGO_TARGET_DIR/release/orchestrata}")
W=$(realpath "${WSLOAD:-$CARGO_TARGET_DIR/release/examples/wsload}")

T=$(mktemp -d /tmp/split.XXXXXX)
OUT=${OUT:-$T/out}; mkdir -p "$OUT"
PIDS=()
# Newest first: the roles stop before the broker they talk to.
cleanup() {
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null; wait "${PIDS[i]}" 2>/dev/null; done
  "$ROOT/tests/kafka/kafka.sh" stop "$T/kafka" 2>/dev/null
  rm -rf "$T/run" "$T/kafka/node-1/data"
}
trap cleanup EXIT

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_tcp() { for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_health() { for _ in $(seq 1 600); do curl -fs "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
export GATEWAY_TOKEN="split-$RANDOM$RANDOM"

KAFKA_OWNER_PID=$$ "$ROOT/tests/kafka/kafka.sh" start "$T/kafka" >/dev/null 2>"$OUT/kafka-start.log" ||
  { echo "Apache Kafka did not start; see $OUT/kafka-start.log"; exit 2; }
KAFKA_ADDR=$(cat "$T/kafka/bootstrap")

# up NAME PREFIX ARGS…: one `orchestrata up` on the broker under topic prefix PREFIX,
# its working directory (views) of its own.
up() {
  local name=$1 prefix=$2; shift 2
  mkdir -p "$T/run/$name"
  (cd "$T/run/$name" && ORCHESTRATA_LOG__TOPIC_PREFIX=$prefix ORCHESTRATA_GATEWAY__MAX_CLIENTS=1000 \
    ORCHESTRATA_GATEWAY__RATE_LIMIT_PER_SECOND=1000000 \
    exec "$BIN" up --kafka "$KAFKA_ADDR" "$@" >"$OUT/up-$name.log" 2>&1) &
  PIDS+=($!)
}

SPLIT="split$RANDOM"
up kernel "$SPLIT" --role kernel
up projector "$SPLIT" --role projector
A=$(port); B=$(port)
up gateway-a "$SPLIT" --role gateway --listen "127.0.0.1:$A"
up gateway-b "$SPLIT" --role gateway --listen "127.0.0.1:$B"
wait_health "$A" && wait_health "$B" || { echo "a gateway did not start; see $OUT/up-gateway-*.log"; exit 2; }
# The gateways answer /health before the kernel has caught up; one round trip through
# the kernel proves it serves.
"$W" rtt "ws://127.0.0.1:$A/" --count 5 >/dev/null 2>&1 || { echo "the kernel does not answer; see $OUT/up-kernel.log"; exit 2; }
"$W" fanout "ws://127.0.0.1:$B/" --publish-url "ws://127.0.0.1:$A/" --subs "$SUBS" --rate "$RATE" --secs "$SECS" \
  >"$OUT/split.out" 2>"$OUT/split.err"
sed 's/^/split_/' "$OUT/split.out"

ALL=$(port)
up all "all$RANDOM" --listen "127.0.0.1:$ALL"
wait_health "$ALL" || { echo "up --kafka did not start; see $OUT/up-all.log"; exit 2; }
"$W" rtt "ws://127.0.0.1:$ALL/" --count 5 >/dev/null 2>&1
"$W" fanout "ws://127.0.0.1:$ALL/" --subs "$SUBS" --rate "$RATE" --secs "$SECS" \
  >"$OUT/all.out" 2>"$OUT/all.err"
sed 's/^/all_/' "$OUT/all.out"
echo "error_lines=$(cat "$OUT"/up-*.log | grep -c '"level":"ERROR"')"
# A kernel whose follower lags its own appends waits up to the request timeout per
# append (`wait_for_end` in src/log/kafka/append.rs).
echo "kernel_read_your_write_timeouts=$(grep -c 'has not read the records before it yet' "$OUT/up-kernel.log")"
echo "out=$OUT"
