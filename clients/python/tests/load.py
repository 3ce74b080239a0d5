"""Helpers of the exactly-once tests: a sender, the agent process, and counting what
happened from the log (not from what the clients say)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from conftest import AGENT, HERE, OPERATOR

from orchestrata import Gateway

#: Packets per exactly-once test (the issue's figure is 10,000).
N = int(os.environ.get("ORCHESTRATA_PY_PACKETS", "400"))
#: How long a test may wait for the agent to get through its packets.
DEADLINE = float(os.environ.get("ORCHESTRATA_PY_DEADLINE", "600"))


async def send_load(url: str, n: int, tag: str, window: int = 32) -> list[str]:
    """Sends `n` packets from the operator to U:Vz, `window` at a time. Each has its own
    idempotency key, so a send retried across a server restart is one packet."""
    gate = asyncio.Semaphore(window)
    async with await Gateway.connect(url, token=OPERATOR, backoff_max=0.5) as gw:

        async def one(i: int) -> str:
            async with gate:
                r = await gw.cxp_send(target="U:Vz", subject="echo", payload={"i": i}, idempotency_key=f"{tag}-{i}")
                return r["message_id"]  # type: ignore[typeddict-item]

        return list(await asyncio.gather(*(one(i) for i in range(n))))


@dataclass
class Effects:
    """What the log holds about U:Vz's packets, counted by message id."""

    sent: Counter[str] = field(default_factory=Counter)
    replies: Counter[str] = field(default_factory=Counter)
    in_progress: Counter[str] = field(default_factory=Counter)
    acked: Counter[str] = field(default_factory=Counter)


async def effects(url: str) -> Effects:
    """Reads every cxp.traffic event about U:Vz with gateway.replay (windows of 10,000)."""
    out = Effects()
    async with await Gateway.connect(url, token=OPERATOR) as gw:
        lo = 0
        while True:
            r = await gw.gateway_replay(topic="cxp.traffic", sequence_from=lo, sequence_to=lo + 9999, filters={"volk_id": "U:Vz"})
            for e in r["events"]:  # type: ignore[typeddict-item]
                p = e["payload"]
                if e["event_type"] == "packet_sent":
                    pkt = p["packet"]
                    if pkt["to_agent"] == "U:Vz":
                        out.sent[pkt["message_id"]] += 1
                    elif pkt["from_agent"] == "U:Vz" and pkt.get("in_reply_to"):
                        out.replies[pkt["in_reply_to"]] += 1
                elif e["event_type"] == "work_status_changed" and p.get("new") == "in_progress":
                    out.in_progress[p["message_id"]] += 1
                elif e["event_type"] == "packet_acknowledged":
                    out.acked[p["message_id"]] += 1
            newest = r["buffer_range"]["newest_sequence"]  # type: ignore[typeddict-item]
            if newest is None or lo + 9999 >= newest:
                return out
            lo += 10000


def assert_exactly_once(fx: Effects, ids: list[str], acked: bool) -> None:
    """Each packet once in the log, one reply and one move to in_progress for each (and
    one acknowledgement, when the agent acknowledges), none skipped."""
    assert len(set(ids)) == len(ids), "every send is its own packet"
    assert set(fx.sent) == set(ids) and set(fx.sent.values()) == {1}, "each packet is in the log once"
    missing = set(ids) - set(fx.replies)
    assert not missing, f"{len(missing)} packets were skipped (no reply), e.g. {sorted(missing)[:3]}"
    twice = {k: v for k, v in fx.replies.items() if v != 1}
    assert not twice, f"replied more than once: {list(twice.items())[:3]}"
    assert set(fx.in_progress) == set(ids), "every packet was moved to in_progress"
    assert set(fx.in_progress.values()) == {1}, "each packet moved to in_progress once"
    if acked:
        assert set(fx.acked) == set(ids) and set(fx.acked.values()) == {1}, "each packet acknowledged once"


class AgentProcess:
    """tests/echo_agent.py as a child process (so it can be killed with -9)."""

    def __init__(self, url: str, workdir: Path, ack: bool = False):
        self.url = url
        self.ack = ack
        self.cursor = workdir / "vz.cursor"
        self.handled = workdir / "handled.txt"
        self.log = workdir / "agent.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "AgentProcess":
        script = str(HERE / "echo_agent.py")
        args = [sys.executable, script, self.url, AGENT, str(self.cursor), str(self.handled)] + (["ack"] if self.ack else [])
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))
        return self

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self) -> int:
        """SIGTERM: the agent drains and exits; returns its exit code."""
        assert self.proc is not None
        self.proc.terminate()
        code = self.proc.wait(timeout=60)
        self.proc = None
        return code

    def lines(self) -> list[str]:
        try:
            return [x for x in self.handled.read_text().split("\n") if x]
        except FileNotFoundError:
            return []

    async def wait_handled(self, count: int) -> None:
        """Waits until `count` distinct packets are handled (or the deadline passes, or
        the agent process died: then the test fails with its log)."""
        deadline = time.monotonic() + DEADLINE
        while len(set(self.lines())) < count:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the agent exited: {self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                if self.proc is not None:
                    self.proc.send_signal(signal.SIGUSR1)
                    await asyncio.sleep(1)
                raise AssertionError(f"{len(set(self.lines()))} of {count} handled: {self.log.read_text()[-3000:]}")
            await asyncio.sleep(0.05)
