#!/usr/bin/env bash
# Apache Kafka (KRaft, no ZooKeeper) for the tests and benches, from Maven Central.
#
#   kafka.sh libs                 assemble the jars (once; cached), print their directory
#   kafka.sh start DIR [NODES]    format and start NODES (1 or 3) combined broker+controller
#                                 nodes on free loopback ports under DIR; wait until every
#                                 node has started; print the bootstrap list (host:port,...)
#   kafka.sh start-node DIR N     start node N (1-based) of DIR again, e.g. after a kill
#   kafka.sh stop-node DIR N      stop node N (SIGTERM, then SIGKILL after 20 s)
#   kafka.sh stop DIR             stop every node of DIR
#
# DIR afterwards holds `bootstrap` (the list), and per node `node-N/`: `pid`, `port`,
# `server.properties`, `data/` and `broker.log` (the broker's own log, through Log4j 2).
# The jars live in ${ORCHESTRATA_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orchestrata}/
# kafka-VERSION/libs, outside the clone, and are reused when present.
#
# Environment: ORCHESTRATA_KAFKA_VERSION (default below), KAFKA_HEAP_OPTS (default
# -Xmx512m), JAVA_HOME (default: `java` on PATH; Kafka 4 needs Java 17 or newer),
# KAFKA_OWNER_PID (when set, a watchdog kills the nodes once that process is gone, so a
# test that dies without cleaning up leaves no broker behind).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=${ORCHESTRATA_KAFKA_VERSION:-4.4.0}
CACHE=${ORCHESTRATA_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orchestrata}
LIBS="$CACHE/kafka-$VERSION/libs"
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java

say() { printf '[kafka.sh] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

libs() {
  if [ -f "$LIBS/.complete" ]; then printf '%s\n' "$LIBS"; return; fi
  command -v mvn >/dev/null 2>&1 || die "mvn (Maven) is needed to assemble Apache Kafka $VERSION"
  say "assembling Apache Kafka $VERSION into $LIBS (mvn dependency:copy-dependencies)"
  local tmp="$LIBS.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! mvn -q -B -Dstyle.color=never -f "$HERE/pom.xml" -Dkafka.version="$VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >&2; then
    rm -rf "$tmp"
    die "mvn could not assemble Apache Kafka $VERSION"
  fi
  touch "$tmp/.complete"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS" 2>/dev/null || rm -rf "$tmp" # another run won the race: keep its copy
  printf '%s\n' "$LIBS"
}

free_ports() { # count: that many distinct free loopback ports, one a line
  python3 -c '
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); held.append(s)
for s in held:
    print(s.getsockname()[1]); s.close()' "$1"
}

write_config() { # dir node nodes voters
  local dir=$1 n=$2 nodes=$3 voters=$4 rf=1 isr=1
  if [ "$nodes" -gt 1 ]; then rf=3; isr=2; fi
  local node="$dir/node-$n"
  cat >"$node/server.properties" <<EOF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(cat "$node/port"),CONTROLLER://127.0.0.1:$(cat "$node/controller-port")
advertised.listeners=PLAINTEXT://127.0.0.1:$(cat "$node/port")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$node/data
num.partitions=1
default.replication.factor=$rf
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
unclean.leader.election.enable=false
EOF
  cat >"$node/log4j2.properties" <<EOF
appender.file.type=File
appender.file.name=file
appender.file.fileName=$node/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
logger.request.name=kafka.request.logger
logger.request.level=WARN
logger.state.name=state.change.logger
logger.state.level=WARN
logger.cleaner.name=kafka.log.LogCleaner
logger.cleaner.level=WARN
EOF
}

java_cmd() { # node-dir main-class args... (call it with `&`: it execs, so $! is the JVM)
  local node=$1; shift
  # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS / KAFKA_JVM_OPTS are word lists
  exec "$JAVA" ${KAFKA_HEAP_OPTS:--Xmx512m -Xms128m} ${KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20} \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$node/log4j2.properties" \
    -cp "$LIBS/*" "$@"
}

launch() { # dir n: start the node's JVM in the background, record its pid
  local node="$1/node-$2"
  : >"$node/broker.log"
  java_cmd "$node" kafka.Kafka "$node/server.properties" >"$node/stdout.log" 2>&1 </dev/null &
  echo $! >"$node/pid"
}

wait_started() { # dir n...: until every node logged that it started
  local dir=$1; shift
  local n pid deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-90}))
  for n in "$@"; do
    pid=$(cat "$dir/node-$n/pid")
    until grep -q "Kafka Server started" "$dir/node-$n/broker.log" 2>/dev/null; do
      if ! kill -0 "$pid" 2>/dev/null; then
        say "node $n exited while starting; its output:"
        tail -n 40 "$dir/node-$n/stdout.log" "$dir/node-$n/broker.log" >&2 || true
        exit 1
      fi
      if [ "$SECONDS" -ge "$deadline" ]; then
        say "node $n did not start within ${KAFKA_START_TIMEOUT:-90} s; its log:"
        tail -n 40 "$dir/node-$n/broker.log" >&2 || true
        exit 1
      fi
      sleep 0.1
    done
  done
}

watchdog() { # dir: kill the nodes when KAFKA_OWNER_PID is gone
  [ -n "${KAFKA_OWNER_PID:-}" ] || return 0
  [ -f "$1/watchdog" ] && kill -0 "$(cat "$1/watchdog")" 2>/dev/null && return 0
  (
    trap '' HUP
    while kill -0 "$KAFKA_OWNER_PID" 2>/dev/null && [ -d "$1" ]; do sleep 1; done
    for pidfile in "$1"/node-*/pid; do
      [ -f "$pidfile" ] || continue
      kill -CONT "$(cat "$pidfile")" 2>/dev/null || true
      kill -KILL "$(cat "$pidfile")" 2>/dev/null || true
    done
  ) >/dev/null 2>&1 </dev/null &
  echo $! >"$1/watchdog"
}

start() { # dir nodes
  local dir=$1 nodes=${2:-1} n
  case "$nodes" in 1 | 3) ;; *) die "NODES is 1 or 3, not $nodes" ;; esac
  libs >/dev/null
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local ports voters="" bootstrap=""
  mapfile -t ports < <(free_ports $((nodes * 2)))
  for n in $(seq 1 "$nodes"); do
    mkdir -p "$dir/node-$n"
    echo "${ports[$(((n - 1) * 2))]}" >"$dir/node-$n/port"
    echo "${ports[$(((n - 1) * 2 + 1))]}" >"$dir/node-$n/controller-port"
    voters+="${voters:+,}$n@127.0.0.1:$(cat "$dir/node-$n/controller-port")"
    bootstrap+="${bootstrap:+,}127.0.0.1:$(cat "$dir/node-$n/port")"
  done
  local cluster_id
  cluster_id=$(python3 -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
  local formats=()
  for n in $(seq 1 "$nodes"); do
    write_config "$dir" "$n" "$nodes" "$voters"
    # A short-lived JVM: the client compiler alone starts it faster.
    KAFKA_JVM_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" \
      java_cmd "$dir/node-$n" kafka.tools.StorageTool format --ignore-formatted \
        -t "$cluster_id" -c "$dir/node-$n/server.properties" >"$dir/node-$n/format.log" 2>&1 &
    formats+=($!)
  done
  for n in $(seq 1 "$nodes"); do
    wait "${formats[$((n - 1))]}" || { cat "$dir/node-$n/format.log" >&2; die "formatting node $n failed"; }
  done
  echo "$bootstrap" >"$dir/bootstrap"
  for n in $(seq 1 "$nodes"); do launch "$dir" "$n"; done
  watchdog "$dir"
  wait_started "$dir" $(seq 1 "$nodes")
  printf '%s\n' "$bootstrap"
}

stop_node() { # dir n
  local pidfile="$1/node-$2/pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
  libs) libs ;;
  start) [ $# -ge 2 ] || die "usage: kafka.sh start DIR [1|3]"; start "$2" "${3:-1}" ;;
  start-node)
    [ $# -eq 3 ] || die "usage: kafka.sh start-node DIR N"
    [ -f "$2/node-$3/server.properties" ] || die "no node $3 in $2"
    libs >/dev/null
    launch "$2" "$3"
    watchdog "$2"
    wait_started "$2" "$3"
    ;;
  stop-node) [ $# -eq 3 ] || die "usage: kafka.sh stop-node DIR N"; stop_node "$2" "$3" ;;
  stop)
    [ $# -eq 2 ] || die "usage: kafka.sh stop DIR"
    for node in "$2"/node-*; do [ -d "$node" ] && stop_node "$2" "${node##*-}" & done
    wait
    ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
