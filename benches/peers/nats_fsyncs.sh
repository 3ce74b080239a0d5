#!/usr/bin/env bash
# Counts the fsyncs JetStream makes per acknowledged publish, to check what each sync
# setting of the benchmarks' NATS peer really does: nats-server runs under
# `strace -f -c -e trace=fsync,fdatasync` while wsload's js-fanout (one subscriber)
# publishes for SECS seconds at RATE/s, once with the default sync and once with
# `sync_interval: always`.
#
#   WSLOAD=target/release/examples/wsload benches/peers/nats_fsyncs.sh
#
# Knobs: WSLOAD (default $CARGO_TARGET_DIR/release/examples/wsload), NATS_SERVER (default:
# benches/peers/nats.sh builds it), SECS (3), RATE (2000).
# Prints per setting: `<sync>_publishes=` (acknowledged), `<sync>_fsyncs=`, `<sync>_fdatasyncs=`.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${WSLOAD:-${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/wsload}
[ -x "$W" ] || { echo "wsload not found at $W (cargo build --release --example wsload)" >&2; exit 2; }
NATS_BIN=${NATS_SERVER:-$("$ROOT/benches/peers/nats.sh")} || exit 2
command -v strace >/dev/null || { echo "strace is needed (apt-get install strace)" >&2; exit 2; }
SECS=${SECS:-3}; RATE=${RATE:-2000}
T=$(mktemp -d /tmp/nats-fsyncs.XXXXXX)
trap 'rm -rf "$T"' EXIT
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_tcp() { for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# The calls column of strace -c's row for syscall $2 (0 when there is no row).
calls() { awk -v s="$2" '$NF == s { print $4; f=1 } END { if (!f) print 0 }' "$1"; }

for sync in default always; do
  NW=$(port)
  extra=""; [ "$sync" = always ] && extra="sync_interval: always"
  cat >"$T/$sync.conf" <<CONF
listen: 127.0.0.1:$(port)
jetstream {
  store_dir: "$T/js-$sync"
  $extra
}
websocket { listen: "127.0.0.1:$NW", no_tls: true }
CONF
  strace -f -c -e trace=fsync,fdatasync -o "$T/$sync.strace" "$NATS_BIN" -c "$T/$sync.conf" >"$T/$sync.log" 2>&1 &
  SPID=$!
  wait_tcp "$NW" || { echo "nats-server did not start:" >&2; cat "$T/$sync.log" >&2; kill "$SPID"; exit 2; }
  "$W" js-fanout "ws://127.0.0.1:$NW" --subs 1 --rate "$RATE" --secs "$SECS" >"$T/$sync.out" 2>&1
  pkill -TERM -P "$SPID" 2>/dev/null   # nats-server, strace's child; strace then reports
  wait "$SPID" 2>/dev/null
  echo "${sync}_publishes=$(sed -n 's/^accepted=//p' "$T/$sync.out")"
  echo "${sync}_fsyncs=$(calls "$T/$sync.strace" fsync)"
  echo "${sync}_fdatasyncs=$(calls "$T/$sync.strace" fdatasync)"
done
