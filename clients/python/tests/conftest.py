"""A real `orchestrata up` for the tests: the binary from $ORCHESTRATA_BIN (else
$CARGO_TARGET_DIR/debug/orchestrata, else the repo's target/debug/orchestrata), a temp
data dir, a free loopback port, the configuration below."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(HERE.parent))

OPERATOR = "operator-secret"
AGENT = "agent-secret"  # read_write, acts as U:Vz only
ADMIN = "admin-secret"
VIEWER = "viewer-secret"
HMAC_CLIENT = ("billing-bot", "bot-secret")  # read_write, acts as U:Cx

CONFIG = """
gateway:
  rate_limit_per_second: 100000
  event_buffer_per_client: {buffer}
  tokens:
    - {{ token: "{agent}", scope: read_write, name: vz-agent, acts_as: ["U:Vz"] }}
    - {{ token: "{admin}", scope: admin, name: ops }}
    - {{ token: "{viewer}", scope: read_only, name: viewer }}
  hmac:
    clients:
      billing-bot: {{ scope: read_write, secrets: ["bot-secret"], acts_as: ["U:Cx"], default_volk: "U:Cx" }}
kernel:
  inbox_capacity: 1000000
"""

# Juniors and the pipeline run real programs: `upper` answers at once, the pipeline's
# coder fails a task that says "cannot" (the run escalates) and works slowly otherwise.
AGENTS = """
agents:
  drivers:
    upper: { cli: [tr, a-z, A-Z], timeout_s: 30 }
    sleeper: { cli: [sh, -c, 'cat > /dev/null; sleep 60'], timeout_s: 120 }
  pipeline:
    coder: [sh, -c, 'if grep -q cannot; then exit 1; fi; sleep 60']
    junior_retries: 0
"""


def binary() -> str:
    for candidate in (
        os.environ.get("ORCHESTRATA_BIN"),
        os.path.join(os.environ["CARGO_TARGET_DIR"], "debug", "orchestrata") if os.environ.get("CARGO_TARGET_DIR") else None,
        str(REPO / "target" / "debug" / "orchestrata"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no orchestrata binary: set ORCHESTRATA_BIN or build it (cargo build)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`orchestrata up` as a child process; `kill()` is kill -9, `start()` again reuses
    the port and the data dir (the same log)."""

    def __init__(self, workdir: Path, buffer: int = 1000):
        self.dir = workdir
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}/"
        self.config = workdir / "orchestrata.yaml"
        self.config.write_text(CONFIG.format(agent=AGENT, admin=ADMIN, viewer=VIEWER, buffer=buffer) + AGENTS)
        self.proc: subprocess.Popen[str] | None = None
        self.stderr = workdir / "up.stderr"

    def start(self) -> "Server":
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCHESTRATA_", "_RJEM_")) and k != "RUST_LOG"}
        env.update(ORCHESTRATA_CONFIG=str(self.config), GATEWAY_TOKEN=OPERATOR, ORCHESTRATA_LOGGING__LEVEL="warn")
        self.proc = subprocess.Popen(
            [binary(), "up", "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(self.dir / "data")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=open(self.stderr, "a"),
            text=True,
        )
        deadline = time.monotonic() + 120
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "gateway listening on" in line:
                break
            if time.monotonic() > deadline:
                break
        else:
            raise RuntimeError(f"up exited: {self.stderr.read_text()[-2000:]}")
        out = self.proc.stdout
        threading.Thread(target=lambda: [None for _ in out], daemon=True).start()
        return self

    def kill(self) -> None:
        """kill -9: a crash, nothing flushed on purpose."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@pytest.fixture
def server(tmp_path: Path):
    s = Server(tmp_path).start()
    yield s
    s.kill()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("up")).start()
    yield s
    s.kill()
