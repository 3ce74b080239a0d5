#!/usr/bin/env bash
# Runs the Python client's tests (pytest) against a real `orchestrata up`.
#
#   ORCHESTRATA_BIN=target/debug/orchestrata clients/python/run_tests.sh [pytest args]
#
# Makes a venv in $PYCLIENT_VENV (default: a temp dir, removed afterwards) with
# websockets and pytest, then runs tests/. ORCHESTRATA_PY_PACKETS sets the packets per
# exactly-once test (default 400; the issue's figure is 10000).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ -z "${ORCHESTRATA_BIN:-}" ]; then
  ORCHESTRATA_BIN="${CARGO_TARGET_DIR:-$(cd ../.. && pwd)/target}/debug/orchestrata"
fi
[ -x "$ORCHESTRATA_BIN" ] || { echo "run_tests.sh: no orchestrata binary at $ORCHESTRATA_BIN (cargo build first)" >&2; exit 1; }
export ORCHESTRATA_BIN
VENV=${PYCLIENT_VENV:-}
if [ -z "$VENV" ]; then
  VENV=$(mktemp -d -t orchestrata-pyclient.XXXXXX)
  trap 'rm -rf "$VENV"' EXIT
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check websockets pytest setuptools wheel
# Every test file is collected; no tests found (exit 5) is a failure like any other.
rc=0
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests "$@" || rc=$?
if [ "$rc" -eq 5 ]; then echo "run_tests.sh: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
