#!/usr/bin/env bash
# The write path as clients meet it (issues 15 and 59): every wsload mode against a default
# `orchestrata up` (sled, default fsync policy) and, in the same run, the fan-out shapes
# against NATS JetStream twice (unsynced and synced acks); then rtt and pipe against
# `orchestrata up --kafka` with a raw Kafka producer on the same broker.
#
#   benches/frontdoor.sh                   # build release, run everything, print the table
#   SKIP_BUILD=1 BIN=… WSLOAD=… KAFKA_PRODUCE=… benches/frontdoor.sh    # measure given binaries
#
# The peers:
# - NATS JetStream 2.11+ built from the Go module proxy by benches/peers/nats.sh (cached
#   outside the clone; NATS_SERVER=path uses another binary), websocket listener, file
#   storage, acked publishes, run twice: `js` with its default sync (a publish is acked
#   before any fsync; the store syncs every 2 minutes) and `jsync` with
#   `sync_interval: always` (every acknowledged publish fsynced first, as ours is). When
#   nats-server cannot be built the NATS steps are skipped with a note.
# - Kafka's raw producer: examples/kafka_produce.rs sends the Avro bytes of the spec's
#   example `packet_sent` event to a fresh topic on the broker `up --kafka` used, with the
#   backend's producer settings (acks=all, idempotent, linger.ms=1): window 1 beside
#   `rtt`, window 256 beside one pipelining connection.
#
# Knobs (environment): RATE (10000) SUBS (100) SECS (5) fan-out; PUB_RATE (100000) sends/s
# offered by the one-subscriber step (more than either server accepts: acknowledgements
# pace it); COUNT (1000) round trips;
# PIPE_SECS (5); KAFKA_COUNT (200) Kafka round trips; KAFKA=0 skips the Kafka run (a
# one-node Apache Kafka from tests/kafka/kafka.sh); NATS=0 skips the NATS peers; OUT
# (directory kept with every server log and wsload output).
# Orchestrata runs with max_clients 1000 and a per-client rate limit of 1,000,000/s
# (the defaults, 100 and 500/s, would refuse the load, not measure it). INBOX sets
# kernel.inbox_capacity (unset: the default, 10,000): nobody reads the recipient's inbox
# here, so past 10,000 packets each send is refused at once (`failed`, with its
# delivery_failed notice) — INBOX=10000000 measures the accepted path throughout.
# Prints `key=value` lines (prefixed sled_, js_, jsync_, kafka_, raw_) and a side-by-side table.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
RATE=${RATE:-10000}; SUBS=${SUBS:-100}; SECS=${SECS:-5}; COUNT=${COUNT:-1000}
PIPE_SECS=${PIPE_SECS:-5}; PUB_RATE=${PUB_RATE:-100000}; KAFKA=${KAFKA:-1}; KAFKA_COUNT=${KAFKA_COUNT:-200}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  # two invocations: the server is built as users build it, without the dev-dependency
  # features an example unifies into the build
  cargo build --release --bin orchestrata || exit 2
  cargo build --release --example wsload --example kafka_produce || exit 2
fi
BIN=$(realpath "${BIN:-$CARGO_TARGET_DIR/release/orchestrata}")
W=$(realpath "${WSLOAD:-$CARGO_TARGET_DIR/release/examples/wsload}")
RAW=$(realpath "${KAFKA_PRODUCE:-$CARGO_TARGET_DIR/release/examples/kafka_produce}")
NATS=${NATS:-1}
if [ "$NATS" = 1 ]; then
  NATS_BIN=${NATS_SERVER:-$("$ROOT/benches/peers/nats.sh")} || NATS_BIN=
  if [ -z "$NATS_BIN" ]; then
    echo "note=nats-server 2.11+ could not be built (benches/peers/nats.sh said why above); NATS peers skipped"
    NATS=0
  else
    echo "nats_version=$("$NATS_BIN" --version)"
  fi
fi

T=$(mktemp -d /tmp/frontdoor.XXXXXX)
OUT=${OUT:-$T/out}; mkdir -p "$OUT"
PIDS=()
BROKER_UP=0
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  [ "$BROKER_UP" = 1 ] && "$ROOT/tests/kafka/kafka.sh" stop "$T/broker"
  rm -rf "$T/sled" "$T/sled-pipe10" "$T/sled-fanout" "$T/sled-fanoutpkt" "$T/sled-pub1" "$T/js" "$T/jsync" "$T/kafka" "$T/broker"
}
trap cleanup EXIT

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_tcp() { for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_health() { for _ in $(seq 1 600); do curl -fs "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
TOKEN="frontdoor-$RANDOM$RANDOM"
export GATEWAY_TOKEN=$TOKEN

# `up` with the load settings; $1 names the run, the rest are arguments of `up`.
start_up() {
  local name=$1; shift
  UP_PORT=$(port)
  ORCHESTRATA_GATEWAY__MAX_CLIENTS=1000 ORCHESTRATA_GATEWAY__RATE_LIMIT_PER_SECOND=1000000 \
    env ${INBOX:+ORCHESTRATA_KERNEL__INBOX_CAPACITY=$INBOX} "$BIN" up --listen "127.0.0.1:$UP_PORT" "$@" >"$OUT/up-$name.log" 2>&1 &
  UP_PID=$!; PIDS+=("$UP_PID")
  wait_health "$UP_PORT" || { echo "orchestrata ($name) did not start; see $OUT/up-$name.log"; exit 2; }
}

# wsload MODE URL ARGS… > $OUT/PREFIX-NAME.out, echoed with the prefix.
run() { measure "$W" "$@"; }
# The same for another tool: measure TOOL PREFIX NAME ARGS…
measure() {
  local tool=$1 prefix=$2 name=$3; shift 3
  "$tool" "$@" >"$OUT/$prefix-$name.out" 2>"$OUT/$prefix-$name.err"
  sed "s/^/${prefix}_${name}_/" "$OUT/$prefix-$name.out"
}
get() { sed -n "s/^$2=//p" "$OUT/$1.out" 2>/dev/null | head -1; }

# --- Orchestrata on sled (the default config: fsync on every append, group commit) ---
start_up sled --data-dir "$T/sled"
URL="ws://127.0.0.1:$UP_PORT/"
run sled rtt rtt "$URL" --count "$COUNT"
run sled pipe1 pipe "$URL" --conns 1 --secs "$PIPE_SECS"
# The gateway alone: gateway.ping pipelined the same way (no command behind it).
run sled pingpipe1 pipe "$URL" --conns 1 --secs "$PIPE_SECS" --method ping
stop "$UP_PID"
# Ten connections on a fresh server too: after the one-connection step the recipient's
# inbox (default 10,000) is full, every send would be refused (a refusal makes twice
# the events), and the two figures would measure different work.
start_up sled-pipe10 --data-dir "$T/sled-pipe10"
URL="ws://127.0.0.1:$UP_PORT/"
run sled pipe10 pipe "$URL" --conns 10 --secs "$PIPE_SECS"
stop "$UP_PID"
# The fan-out on a fresh server: sends the pipe runs queued before their clients left
# would still be executing, and their history would weigh on it.
start_up sled-fanout --data-dir "$T/sled-fanout"
URL="ws://127.0.0.1:$UP_PORT/"
run sled fanout fanout "$URL" --subs "$SUBS" --rate "$RATE" --secs "$SECS"
stop "$UP_PID"
# The same with subscribers filtered to `packet_sent`: one frame per packet, as NATS's
# subscribers get (unfiltered, each packet also brings its new thread's `thread_opened`
# and its later transitions).
start_up sled-fanoutpkt --data-dir "$T/sled-fanoutpkt"
URL="ws://127.0.0.1:$UP_PORT/"
run sled fanoutpkt fanout "$URL" --subs "$SUBS" --rate "$RATE" --secs "$SECS" \
  --filters '{"event_type":"packet_sent"}'
stop "$UP_PID"

# One publisher pipelining as fast as acknowledgements allow, one subscriber: the
# pipelined shape with a peer, the same on both servers.
start_up sled-pub1 --data-dir "$T/sled-pub1"
URL="ws://127.0.0.1:$UP_PORT/"
run sled pub1 fanout "$URL" --subs 1 --rate "$PUB_RATE" --secs "$SECS" \
  --filters '{"event_type":"packet_sent"}'
stop "$UP_PID"

# --- NATS JetStream, the same fan-out shapes: its default sync, then sync always ---
# $1 names the run (js, jsync), $2 is an extra setting of the jetstream block.
run_nats() {
  local name=$1 sync=$2
  NP=$(port); NW=$(port)
  cat >"$T/nats-$name.conf" <<EOF
listen: 127.0.0.1:$NP
jetstream {
  store_dir: "$T/$name"
  $sync
}
websocket { listen: "127.0.0.1:$NW", no_tls: true }
EOF
  "$NATS_BIN" -c "$T/nats-$name.conf" >"$OUT/nats-$name.log" 2>&1 &
  NPID=$!; PIDS+=("$NPID")
  wait_tcp "$NW" || { echo "nats-server ($name) did not start; see $OUT/nats-$name.log"; exit 2; }
  run "$name" rtt js-rtt "ws://127.0.0.1:$NW" --count "$COUNT"
  run "$name" fanout js-fanout "ws://127.0.0.1:$NW" --subs "$SUBS" --rate "$RATE" --secs "$SECS"
  run "$name" pub1 js-fanout "ws://127.0.0.1:$NW" --subs 1 --rate "$PUB_RATE" --secs "$SECS"
  stop "$NPID"
  rm -rf "${T:?}/$name"
}
if [ "$NATS" = 1 ]; then
  run_nats js ""
  run_nats jsync "sync_interval: always"
fi

# --- Orchestrata on Kafka: all roles in one process, a private Apache Kafka broker ---
# (tests/kafka/kafka.sh: KRaft, one node, jars from Maven Central cached outside the clone)
if [ "$KAFKA" = 1 ]; then
  if ! KB=$(KAFKA_OWNER_PID=$$ "$ROOT/tests/kafka/kafka.sh" start "$T/broker" 1 2>"$OUT/kafka-start.log"); then
    echo "note=the Kafka broker did not start (see $OUT/kafka-start.log); Kafka run skipped"
  else
    BROKER_UP=1
    mkdir -p "$T/kafka"
    # with --kafka the view store defaults to ./data/views: run from a temp dir
    pushd "$T/kafka" >/dev/null && start_up kafka --kafka "$KB" && popd >/dev/null
    KUP_PORT=$UP_PORT; KUP_PID=$UP_PID
    sleep 3   # the roster registration and the consumers settle
    KURL="ws://127.0.0.1:$KUP_PORT/"
    run kafka rtt rtt "$KURL" --count "$KAFKA_COUNT"
    run kafka pipe1 pipe "$KURL" --conns 1 --secs "$PIPE_SECS"
    run kafka pipe10 pipe "$KURL" --conns 10 --secs "$PIPE_SECS"
    stop "$KUP_PID"
    echo "kafka_error_lines=$(grep -c 'ERROR' "$OUT/up-kafka.log")"
    # The raw producer on the same broker, once ours has stopped.
    measure "$RAW" raw rtt "$KB" --window 1 --secs "$PIPE_SECS"
    measure "$RAW" raw pipe1 "$KB" --window 256 --secs "$PIPE_SECS"
    "$ROOT/tests/kafka/kafka.sh" stop "$T/broker"; BROKER_UP=0
    cp "$T/broker/node-1/broker.log" "$OUT/kafka-broker.log" 2>/dev/null
  fi
fi

# --- side by side ---
row() { printf '%-34s %12s %12s %12s %s\n' "$@"; }
echo
row "through the public API" "orchestrata" "nats-js" "nats-js sync" "target"
row "lone send/publish p50 ms" "$(get sled-rtt send_p50_ms)" "$(get js-rtt publish_p50_ms)" "$(get jsync-rtt publish_p50_ms)" "<= nats sync"
row "lone send/publish p99 ms" "$(get sled-rtt send_p99_ms)" "$(get js-rtt publish_p99_ms)" "$(get jsync-rtt publish_p99_ms)" "< 2"
# fan LABEL OURS-STEP NATS-STEP KEY TARGET
fan() { row "$1" "$(get "sled-$2" "$4")" "$(get "js-$3" "$4")" "$(get "jsync-$3" "$4")" "$5"; }
fan "fan-out offered sends/s" fanout fanout offered_per_s "$RATE"
fan "fan-out accepted sends/s" fanout fanout accepted_per_s "$RATE"
fan "deliveries/s" fanout fanout deliveries_per_s ">= nats"
fan "missing deliveries" fanout fanout missing "0"
fan "delivery p50 ms" fanout fanout delivery_p50_ms ""
fan "delivery p99 ms" fanout fanout delivery_p99_ms "< 50, <= nats"
fan "frames/s (every event)" fanout fanout frames_per_s ""
row "filtered to packet_sent:" "" "" "" ""
fan "  accepted sends/s" fanoutpkt fanout accepted_per_s "$RATE"
fan "  deliveries/s" fanoutpkt fanout deliveries_per_s ">= nats"
fan "  missing deliveries" fanoutpkt fanout missing "0"
fan "  delivery p99 ms" fanoutpkt fanout delivery_p99_ms "< 50, <= nats"
row "one publisher pipelining, 1 sub:" "" "" "" ""
fan "  accepted sends/s" pub1 pub1 accepted_per_s ""
fan "  missing deliveries" pub1 pub1 missing "0"
fan "  delivery p99 ms" pub1 pub1 delivery_p99_ms ""
echo
row "round trips, pipelining" "sled" "kafka" "raw kafka" "target"
row "gateway.ping p50/p99 ms" "$(get sled-rtt ping_p50_ms)/$(get sled-rtt ping_p99_ms)" "$(get kafka-rtt ping_p50_ms)/$(get kafka-rtt ping_p99_ms)" "" ""
row "cxp.send p50/p99 ms" "$(get sled-rtt send_p50_ms)/$(get sled-rtt send_p99_ms)" "$(get kafka-rtt send_p50_ms)/$(get kafka-rtt send_p99_ms)" "$(get raw-rtt ack_p50_ms)/$(get raw-rtt ack_p99_ms)" "sled: p50 <= 2x ping, p99 < 1; kafka: p50 < 5"
row "cxp.send/ping p50" "$(get sled-rtt send_over_ping_p50)" "$(get kafka-rtt send_over_ping_p50)" "" "<= 2"
row "pipelined sends/s, 1 conn" "$(get sled-pipe1 acked_per_s)" "$(get kafka-pipe1 acked_per_s)" "$(get raw-pipe1 acked_per_s)" "sled >= 20000; kafka >= 10000"
row "pipelined sends/s, 10 conns" "$(get sled-pipe10 acked_per_s)" "$(get kafka-pipe10 acked_per_s)" "" "sled >= 50000"
row "pipelined pings/s, 1 conn" "$(get sled-pingpipe1 acked_per_s)" "" "" "(the gateway alone)"
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "out=$OUT"
