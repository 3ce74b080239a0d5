#!/usr/bin/env bash
# The TypeScript client's tests (issue 62): `npm ci` from the lockfile, then Node's test
# runner over test/ — the generated types and the dist/ build against fresh ones, npm
# pack into a fresh folder, and the client against real `orchestrata up` processes
# (every method, exactly-once through a server crash, a cut connection and an agent
# restart). tests/run.sh calls it after the cargo tests.
#
#   ORCHESTRATA_BIN=target/debug/orchestrata clients/typescript/run_tests.sh
#   TSCLIENT_PACKETS=10000 ...  packets per exactly-once test (default 400)
set -euo pipefail
cd "$(dirname "$0")"
: "${ORCHESTRATA_BIN:?set ORCHESTRATA_BIN to the orchestrata binary}"
ORCHESTRATA_BIN=$(cd "$(dirname "$ORCHESTRATA_BIN")" && pwd)/$(basename "$ORCHESTRATA_BIN")
export ORCHESTRATA_BIN
npm ci --no-audit --no-fund --loglevel=error >/dev/null
if [ "$#" -eq 0 ]; then set -- test/*.test.mjs; fi
exec node --test --test-concurrency=1 "$@"
