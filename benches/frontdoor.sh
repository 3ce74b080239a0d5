#!/usr/bin/env bash
# The write path as clients meet it (issue 15): every wsload mode against a default
# `orchestrata up` (sled, default fsync policy) and, in the same run, the fan-out shape
# against NATS JetStream (Debian's nats-server: websocket listener, file storage, acked
# publishes); then rtt and pipe against `orchestrata up --kafka` on a private tansu broker.
#
#   benches/frontdoor.sh                   # build release, run everything, print the table
#   SKIP_BUILD=1 BIN=… WSLOAD=… benches/frontdoor.sh    # measure given binaries
#
# Knobs (environment): RATE (10000) SUBS (100) SECS (5) fan-out; PUB_RATE (100000) sends/s
# offered by the one-subscriber step (more than either server accepts: acknowledgements
# pace it); COUNT (1000) round trips;
# PIPE_SECS (5); KAFKA_COUNT (200) Kafka round trips; KAFKA=0 skips the Kafka run; TANSU (tansu binary, default
# $ORCHESTRATA_TANSU); OUT (directory kept with every server log and wsload output).
# Orchestrata runs with max_clients 1000 and a per-client rate limit of 1,000,000/s
# (the defaults, 100 and 500/s, would refuse the load, not measure it). INBOX sets
# kernel.inbox_capacity (unset: the default, 10,000): nobody reads the recipient's inbox
# here, so past 10,000 packets each send is refused at once (`failed`, with its
# delivery_failed notice) — INBOX=10000000 measures the accepted path throughout.
# Prints `key=value` lines (prefixed sled_, js_, kafka_) and a side-by-side table.
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
  cargo build --release --example wsload || exit 2
fi
BIN=$(realpath "${BIN:-$CARGO_TARGET_DIR/release/orchestrata}")
W=$(realpath "${WSLOAD:-$CARGO_TARGET_DIR/release/examples/wsload}")
command -v nats-server >/dev/null || apt-get install -y -qq nats-server >/dev/null || {
  echo "nats-server is missing and could not be installed"; exit 2; }

T=$(mktemp -d /tmp/frontdoor.XXXXXX)
OUT=${OUT:-$T/out}; mkdir -p "$OUT"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T/sled" "$T/sled-pipe10" "$T/sled-fanout" "$T/sled-fanoutpkt" "$T/sled-pub1" "$T/js" "$T/kafka"
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
run() {
  local prefix=$1 name=$2; shift 2
  "$W" "$@" >"$OUT/$prefix-$name.out" 2>"$OUT/$prefix-$name.err"
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

# --- NATS JetStream, the same fan-out shapes ---
NP=$(port); NW=$(port)
cat >"$T/nats.conf" <<EOF
listen: 127.0.0.1:$NP
jetstream { store_dir: "$T/js" }
websocket { listen: "127.0.0.1:$NW", no_tls: true }
EOF
nats-server -c "$T/nats.conf" >"$OUT/nats.log" 2>&1 &
NPID=$!; PIDS+=("$NPID")
wait_tcp "$NW" || { echo "nats-server did not start; see $OUT/nats.log"; exit 2; }
run js fanout js-fanout "ws://127.0.0.1:$NW" --subs "$SUBS" --rate "$RATE" --secs "$SECS"
run js pub1 js-fanout "ws://127.0.0.1:$NW" --subs 1 --rate "$PUB_RATE" --secs "$SECS"
stop "$NPID"

# --- Orchestrata on Kafka: all roles in one process, a private tansu broker ---
if [ "$KAFKA" = 1 ]; then
  TB=${TANSU:-${ORCHESTRATA_TANSU:-}}
  if [ -z "$TB" ] || [ ! -x "$TB" ]; then
    echo "note=no tansu binary (set TANSU or ORCHESTRATA_TANSU); Kafka run skipped"
  else
    KP=$(port)
    "$TB" broker --listener-url "tcp://127.0.0.1:$KP" --advertised-listener-url "tcp://127.0.0.1:$KP" \
      --storage-engine memory://tansu/ >"$OUT/tansu.log" 2>&1 &
    TPID=$!; PIDS+=("$TPID")
    wait_tcp "$KP" || { echo "tansu did not start; see $OUT/tansu.log"; exit 2; }
    mkdir -p "$T/kafka"
    # with --kafka the view store defaults to ./data/views: run from a temp dir
    pushd "$T/kafka" >/dev/null && start_up kafka --kafka "127.0.0.1:$KP" && popd >/dev/null
    KUP_PORT=$UP_PORT; KUP_PID=$UP_PID
    sleep 3   # the roster registration and the consumers settle
    KURL="ws://127.0.0.1:$KUP_PORT/"
    run kafka rtt rtt "$KURL" --count "$KAFKA_COUNT"
    run kafka pipe1 pipe "$KURL" --conns 1 --secs "$PIPE_SECS"
    run kafka pipe10 pipe "$KURL" --conns 10 --secs "$PIPE_SECS"
    stop "$KUP_PID"
    echo "kafka_error_lines=$(grep -c 'ERROR' "$OUT/up-kafka.log")"
    stop "$TPID"
  fi
fi

# --- side by side ---
row() { printf '%-34s %14s %14s %s\n' "$@"; }
echo
row "through the public API" "orchestrata" "nats-js" "target"
row "fan-out offered sends/s" "$(get sled-fanout offered_per_s)" "$(get js-fanout offered_per_s)" "$RATE"
row "fan-out accepted sends/s" "$(get sled-fanout accepted_per_s)" "$(get js-fanout accepted_per_s)" "$RATE"
row "deliveries/s" "$(get sled-fanout deliveries_per_s)" "$(get js-fanout deliveries_per_s)" ">= nats"
row "missing deliveries" "$(get sled-fanout missing)" "$(get js-fanout missing)" "0"
row "delivery p50 ms" "$(get sled-fanout delivery_p50_ms)" "$(get js-fanout delivery_p50_ms)" ""
row "delivery p99 ms" "$(get sled-fanout delivery_p99_ms)" "$(get js-fanout delivery_p99_ms)" "< 50, <= nats"
row "frames/s (every event)" "$(get sled-fanout frames_per_s)" "$(get js-fanout frames_per_s)" ""
row "filtered to packet_sent:" "" "" ""
row "  accepted sends/s" "$(get sled-fanoutpkt accepted_per_s)" "$(get js-fanout accepted_per_s)" "$RATE"
row "  deliveries/s" "$(get sled-fanoutpkt deliveries_per_s)" "$(get js-fanout deliveries_per_s)" ">= nats"
row "  missing deliveries" "$(get sled-fanoutpkt missing)" "$(get js-fanout missing)" "0"
row "  delivery p99 ms" "$(get sled-fanoutpkt delivery_p99_ms)" "$(get js-fanout delivery_p99_ms)" "< 50, <= nats"
row "one publisher pipelining, 1 sub:" "" "" ""
row "  accepted sends/s" "$(get sled-pub1 accepted_per_s)" "$(get js-pub1 accepted_per_s)" ""
row "  missing deliveries" "$(get sled-pub1 missing)" "$(get js-pub1 missing)" "0"
row "  delivery p99 ms" "$(get sled-pub1 delivery_p99_ms)" "$(get js-pub1 delivery_p99_ms)" ""
echo
row "round trips, pipelining" "sled" "kafka" "target"
row "gateway.ping p50/p99 ms" "$(get sled-rtt ping_p50_ms)/$(get sled-rtt ping_p99_ms)" "$(get kafka-rtt ping_p50_ms)/$(get kafka-rtt ping_p99_ms)" ""
row "cxp.send p50/p99 ms" "$(get sled-rtt send_p50_ms)/$(get sled-rtt send_p99_ms)" "$(get kafka-rtt send_p50_ms)/$(get kafka-rtt send_p99_ms)" "sled: p50 <= 2x ping, p99 < 1; kafka: p50 < 10"
row "cxp.send/ping p50" "$(get sled-rtt send_over_ping_p50)" "$(get kafka-rtt send_over_ping_p50)" "<= 2"
row "pipelined sends/s, 1 conn" "$(get sled-pipe1 acked_per_s)" "$(get kafka-pipe1 acked_per_s)" "sled >= 20000; kafka >= 5000"
row "pipelined sends/s, 10 conns" "$(get sled-pipe10 acked_per_s)" "$(get kafka-pipe10 acked_per_s)" "sled >= 50000"
row "pipelined pings/s, 1 conn" "$(get sled-pingpipe1 acked_per_s)" "" "(the gateway alone)"
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "out=$OUT"
