#!/usr/bin/env bash
# Runs Orchestrata's whole test suite on a fresh machine.
#
# 1. Installs what the suite needs and is missing: redis-server, kcat and
#    docker-compose (Debian), Java and Maven (Debian) with which tests/kafka/kafka.sh
#    assembles Apache Kafka and tests/neo4j/server.sh assembles Neo4j 5 community from
#    Maven Central (both cached outside the clone), the Python packages of the
#    cross-language consumer test (confluent-kafka, fastavro), of the MessagePack
#    decoding test (msgpack) and Neo4j's Python driver (neo4j).
# 2. Starts an Apache Kafka broker (KRaft), a redis-server and a Neo4j on free
#    loopback ports (never the ports a running `orchestrata up` uses) and exports their
#    addresses:
#      ORCHESTRATA_TEST_KAFKA=127.0.0.1:PORT   ORCHESTRATA_TEST_REDIS=redis://127.0.0.1:PORT
#      ORCHESTRATA_TEST_NEO4J=bolt://127.0.0.1:PORT (user neo4j, password in
#      ORCHESTRATA_TEST_NEO4J_PASSWORD)
# 3. Builds, then runs `cargo test --workspace` within ORCHESTRATA_TEST_TIMEOUT seconds
#    (default 2400; the Python consumer test is spawned from a Rust test).
# 4. Stops the services it started, whatever happened.
#
# Extra arguments go to `cargo test` (e.g. `tests/run.sh -- conformance`).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[run.sh]\033[0m %s\n' "$*" >&2; }

# --- install -------------------------------------------------------------------
if ! command -v redis-server >/dev/null 2>&1; then
  log "installing redis-server (Debian package)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server >/dev/null; fi
fi
for tool in kcat docker-compose; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "installing $tool (Debian package; readers from other languages, the compose file check)"
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq "$tool" >/dev/null; fi
  fi
done
if ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium (Debian package; the browser driver tests drive it headless)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
if ! command -v npm >/dev/null 2>&1; then
  log "installing nodejs and npm (Debian packages; the console e2e test drives chromium with playwright-core)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm >/dev/null; fi
fi
log "npm ci --prefix tests/console (playwright-core for the console e2e test)"
npm ci --prefix tests/console --no-audit --no-fund --loglevel=error >/dev/null
PY=${PYTHON:-python3}
if ! "$PY" -c 'import confluent_kafka, fastavro' >/dev/null 2>&1; then
  log "installing confluent-kafka, fastavro from PyPI"
  "$PY" -m pip install -q --disable-pip-version-check confluent-kafka fastavro
fi
if ! "$PY" -c 'import neo4j' >/dev/null 2>&1; then
  log "installing neo4j (Neo4j's Python driver) from PyPI"
  "$PY" -m pip install -q --disable-pip-version-check neo4j
fi
if ! "$PY" -c 'import msgpack' >/dev/null 2>&1; then
  log "installing msgpack from PyPI (an independent decoder of our MessagePack packets)"
  "$PY" -m pip install -q --disable-pip-version-check msgpack
fi

# --- Apache Kafka (tests/kafka/kafka.sh) -------------------------------------------
# Java and Maven assemble the broker from Maven Central into a cache outside the clone
# (reused when present); it formats and starts in the background while the rest starts
# and the tests build, and is waited for before they run.
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "installing $tool (Debian package; Apache Kafka runs on Java 17, Maven assembles it)"
    pkg=maven; [ "$tool" = java ] && pkg=openjdk-17-jre-headless
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq "$pkg" >/dev/null; fi
  fi
done
KAFKA_SH="$PWD/tests/kafka/kafka.sh"
"$KAFKA_SH" libs >/dev/null
KAFKA_DIR=$(mktemp -d -t orchestrata-kafka.XXXXXX)
KAFKA_OWNER_PID=$$ "$KAFKA_SH" start "$KAFKA_DIR" >"$KAFKA_DIR/start.out" 2>"$KAFKA_DIR/start.err" &
KAFKA_STARTER=$!
kafka_cleanup() { "$KAFKA_SH" stop "$KAFKA_DIR" 2>/dev/null || true; rm -rf "$KAFKA_DIR"; }
kafka_wait() {
  if ! wait "$KAFKA_STARTER"; then
    log "Apache Kafka did not start:"; cat "$KAFKA_DIR/start.err" >&2; exit 1
  fi
  ORCHESTRATA_TEST_KAFKA=$(cat "$KAFKA_DIR/bootstrap")
  export ORCHESTRATA_TEST_KAFKA
  log "Apache Kafka on $ORCHESTRATA_TEST_KAFKA (log: $KAFKA_DIR/node-1/broker.log)"
}
kafka_log_tail() { log "last lines of Apache Kafka's log:"; tail -n 40 "$KAFKA_DIR/node-1/broker.log" >&2 || true; }

# --- start services on free loopback ports -----------------------------------------
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
WORK=$(mktemp -d -t orchestrata-tests.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  kafka_cleanup
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

wait_port() { # host port name
  for _ in $(seq 1 100); do
    if "$PY" -c "import socket,sys; s=socket.create_connection(('$1',$2),0.2)" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "$3 did not start on $1:$2; its log:"; cat "$WORK/$3.log" >&2 || true; exit 1
}

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port 127.0.0.1 "$RPORT" redis
export ORCHESTRATA_TEST_REDIS="redis://127.0.0.1:$RPORT"
log "redis on $ORCHESTRATA_TEST_REDIS"

# --- Neo4j (the knowledge-graph tests) ------------------------------------------------
# Neo4j 5 community with its Bolt connector (tests/neo4j/server.sh: jars from Maven
# Central, cached outside the clone), on a free loopback port, auth on with a fixed
# password. It starts in the background while the tests build; neo4j_wait waits for it.
if ! command -v javac >/dev/null 2>&1; then
  log "installing a JDK (Debian package; Neo4j's launcher is compiled from source)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq default-jdk-headless >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq default-jdk-headless >/dev/null; fi
fi
bash tests/neo4j/server.sh prepare
NPORT=$(free_port)
export ORCHESTRATA_TEST_NEO4J_PASSWORD=orchestrata-test
bash tests/neo4j/server.sh run "$WORK/neo4j" "$NPORT" "$ORCHESTRATA_TEST_NEO4J_PASSWORD" >"$WORK/neo4j.log" 2>&1 &
NEO4J_PID=$!
PIDS+=("$NEO4J_PID")
neo4j_wait() {
  for _ in $(seq 1 3000); do
    grep -q "neo4j ready" "$WORK/neo4j.log" && break
    kill -0 "$NEO4J_PID" 2>/dev/null || { log "Neo4j exited; its log:"; cat "$WORK/neo4j.log" >&2; exit 1; }
    sleep 0.1
  done
  grep -q "neo4j ready" "$WORK/neo4j.log" || { log "Neo4j did not start within 300 s; its log:"; cat "$WORK/neo4j.log" >&2; exit 1; }
  export ORCHESTRATA_TEST_NEO4J="bolt://127.0.0.1:$NPORT"
  log "Neo4j on $ORCHESTRATA_TEST_NEO4J"
}

# --- run ------------------------------------------------------------------------
# --no-fail-fast: one failing test binary does not hide the others' results.
# The run (not the build) has a time limit, ORCHESTRATA_TEST_TIMEOUT seconds: a test
# that hangs fails the run with the name cargo printed ("has been running for over 60
# seconds") instead of outliving CI's limit with nothing said.
log "cargo test --workspace --no-run (build)"
cargo test --workspace --no-run "$@"
kafka_wait
neo4j_wait
budget="${ORCHESTRATA_TEST_TIMEOUT:-2400}"
log "cargo test --workspace --no-fail-fast (limit ${budget}s)"
rc=0
timeout --kill-after=15 "$budget" cargo test --workspace --no-fail-fast "$@" || rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  log "the tests did not finish within ${budget}s: a test hangs (see which one 'has been running for over 60 seconds' above)"
  pkill -KILL -f "${CARGO_TARGET_DIR:-$PWD/target}/debug/deps/" 2>/dev/null || true
fi
if [ "$rc" -ne 0 ]; then
  kafka_log_tail
  for svc in redis neo4j; do
    [ -s "$WORK/$svc.log" ] && { log "last lines of $svc's log:"; tail -n 40 "$WORK/$svc.log" >&2; }
  done
  exit 101
fi
log "all tests passed"

# --- the Python client (clients/python, issue 62): pytest against the debug binary ---
log "clients/python/run_tests.sh (pytest against a real up)"
ORCHESTRATA_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/orchestrata" PYTHON="$PY" clients/python/run_tests.sh || exit 101
log "python client tests passed"

# --- the TypeScript client (clients/typescript, issue 62): node --test against the debug binary ---
log "clients/typescript/run_tests.sh (node --test against a real up)"
ORCHESTRATA_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/orchestrata" clients/typescript/run_tests.sh || exit 101
log "typescript client tests passed"
