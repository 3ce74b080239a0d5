#!/usr/bin/env bash
# Prints the path of a nats-server built from the Go module proxy, building it on first
# use into a cache outside the clone (like Cargo's target dir) and reusing it after.
# The benchmarks' JetStream peer needs 2.11 or newer: older servers (Debian's 2.9)
# cannot sync every acknowledged publish (`sync_interval: always`).
#
#   benches/peers/nats.sh            # build if needed, print the binary's path
#
# NATS_VERSION (v2.15.3) picks the module version; NATS_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/orchestrata/nats-$NATS_VERSION) where it is kept.
# Exits 1 with the reason on stderr when Go is missing or the build fails.
set -uo pipefail

VERSION=${NATS_VERSION:-v2.15.3}
CACHE=${NATS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orchestrata/nats-$VERSION}
BIN=$CACHE/nats-server

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null || { echo "nats.sh: go is not installed; cannot build nats-server $VERSION" >&2; exit 1; }
mkdir -p "$CACHE" || exit 1
echo "nats.sh: building nats-server $VERSION into $CACHE (once)" >&2
# Built outside any module (cd to the cache) so the clone's files play no part.
if ! (cd "$CACHE" && GOBIN=$CACHE GOFLAGS=-mod=mod CGO_ENABLED=0 \
  go install "github.com/nats-io/nats-server/v2@$VERSION") >"$CACHE/build.log" 2>&1; then
  echo "nats.sh: building nats-server $VERSION failed; see $CACHE/build.log" >&2
  tail -5 "$CACHE/build.log" >&2
  exit 1
fi
"$BIN" --version >/dev/null 2>&1 || { echo "nats.sh: $BIN does not run" >&2; exit 1; }
echo "$BIN"
