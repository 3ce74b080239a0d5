#!/usr/bin/env bash
# A Neo4j community server for the tests and for running by hand (docs/operations.md):
# Neo4j's jars from Maven Central (tests/neo4j/pom.xml), cached outside the clone, and
# a small launcher (Neo4jServer.java) that runs the embedded DBMS with its Bolt
# connector on loopback.
#
#   tests/neo4j/server.sh prepare                    fetch the jars once, compile the launcher
#   tests/neo4j/server.sh run HOME PORT [PASSWORD]   serve Bolt on 127.0.0.1:PORT with data
#                                                    in HOME (kept across runs); prints
#                                                    "neo4j ready bolt://127.0.0.1:PORT"
#                                                    when it accepts queries; SIGTERM stops
#                                                    it cleanly
#
# With PASSWORD, user `neo4j` has it (auth on); without, auth is off. The cache is
# ORCHESTRATA_NEO4J_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/orchestrata/neo4j-VERSION.
# Java: ORCHESTRATA_NEO4J_JAVA, default `java` (Neo4j 5.26 runs on Java 17 or 21).
# Heap: ORCHESTRATA_NEO4J_HEAP, default 512m.
set -euo pipefail

NEO4J_VERSION=5.26.30 # the pom's neo4j.version and docker-compose.yml's image
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${ORCHESTRATA_NEO4J_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orchestrata/neo4j-$NEO4J_VERSION}
JAVA=${ORCHESTRATA_NEO4J_JAVA:-java}
JAVAC=${ORCHESTRATA_NEO4J_JAVAC:-$(dirname "$(readlink -f "$(command -v "$JAVA")")")/javac}
SOURCE_ID=$(sha256sum "$here/Neo4jServer.java" | cut -c1-16)
CLASSES="$CACHE/classes-$SOURCE_ID"

prepare() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9 # tests started at once prepare one at a time
  if [ ! -f "$CACHE/lib/.complete" ]; then
    echo "neo4j: fetching Neo4j $NEO4J_VERSION from Maven Central into $CACHE/lib" >&2
    rm -rf "$CACHE/lib"
    mvn -B -q -f "$here/pom.xml" -Dneo4j.version="$NEO4J_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$CACHE/lib" >&2
    touch "$CACHE/lib/.complete"
  fi
  if [ ! -f "$CLASSES/Neo4jServer.class" ]; then
    mkdir -p "$CLASSES.tmp"
    "$JAVAC" -nowarn -d "$CLASSES.tmp" -cp "$CACHE/lib/*" "$here/Neo4jServer.java"
    rm -rf "$CLASSES" && mv "$CLASSES.tmp" "$CLASSES"
  fi
  exec 9>&-
}

run() {
  local home=$1 port=$2 password=${3:-}
  prepare
  mkdir -p "$home"
  local auth=false
  [ -n "$password" ] && auth=true
  cat >"$home/neo4j.conf" <<CONF
server.bolt.enabled=true
server.bolt.listen_address=127.0.0.1:$port
server.bolt.advertised_address=127.0.0.1:$port
server.bolt.tls_level=DISABLED
dbms.security.auth_enabled=$auth
dbms.usage_report.enabled=false
server.memory.pagecache.size=32m
db.memory.transaction.total.max=256m
CONF
  exec "$JAVA" -Xms64m "-Xmx${ORCHESTRATA_NEO4J_HEAP:-512m}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dfile.encoding=UTF-8 -cp "$CLASSES:$CACHE/lib/*" Neo4jServer "$home" ${password:+"$password"}
}

case "${1:-}" in
  prepare) prepare ;;
  run) shift; [ $# -ge 2 ] || { echo "usage: $0 run HOME PORT [PASSWORD]" >&2; exit 2; }; run "$@" ;;
  *) echo "usage: $0 prepare | run HOME PORT [PASSWORD]" >&2; exit 2 ;;
esac
