"""Issue 62: an agent handles every packet exactly once and skips none, counted from
the log, while the server is killed with -9 and restarted, while its connection is cut
by a proxy, and while the agent process itself is killed and restarted with its cursor
file. N packets per test: ORCHESTRATA_PY_PACKETS (default in load.py)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path

from conftest import OPERATOR, Server
from load import N, AgentProcess, assert_exactly_once, effects, send_load
from proxy import Proxy

from orchestrata import Gateway


def test_the_server_killed_and_restarted_twice_loses_and_repeats_nothing(server, tmp_path: Path) -> None:
    agent = AgentProcess(server.url, tmp_path, ack=True).start()

    async def main() -> list[str]:
        sender = asyncio.create_task(send_load(server.url, N, "crash"))
        for share in (3, 3 / 2):
            await agent.wait_handled(int(N / share))
            server.kill()
            await asyncio.to_thread(server.start)
        ids = await sender
        await agent.wait_handled(N)
        return ids

    try:
        ids = asyncio.run(main())
        fx = asyncio.run(effects(server.url))
        assert_exactly_once(fx, ids, agent.ack)
        # The agent process never died: no packet was handed to its code twice.
        assert sorted(agent.lines()) == sorted(ids)
        assert agent.stop() == 0, "the agent drains and exits cleanly on SIGTERM"
    finally:
        agent.kill()


def test_cutting_the_agents_connection_mid_stream_loses_and_repeats_nothing(server, tmp_path: Path) -> None:

    async def main() -> tuple[list[str], int, AgentProcess]:
        proxy = await Proxy(server.port).start()
        agent = AgentProcess(proxy.url, tmp_path, ack=True).start()
        try:
            sender = asyncio.create_task(send_load(server.url, N, "cut"))
            cut = 0
            for k in range(1, 5):
                await agent.wait_handled(N * k // 5)
                cut += proxy.cut()
            ids = await sender
            await agent.wait_handled(N)
            return ids, cut, agent
        except BaseException:
            agent.kill()
            raise
        finally:
            await proxy.close()

    ids, cut, agent = asyncio.run(main())
    try:
        assert cut >= 4, "each cut dropped the agent's live connection"
        fx = asyncio.run(effects(server.url))
        assert_exactly_once(fx, ids, agent.ack)
        assert sorted(agent.lines()) == sorted(ids), "no packet handed twice"
    finally:
        agent.kill()


def test_the_agent_process_killed_and_restarted_resumes_from_its_cursor(server, tmp_path: Path) -> None:
    agent = AgentProcess(server.url, tmp_path, ack=True).start()
    kills = 0

    async def main() -> list[str]:
        nonlocal kills
        sender = asyncio.create_task(send_load(server.url, N, "restart"))
        for share in (4, 2, 4 / 3):
            await agent.wait_handled(int(N / share))
            agent.kill()
            kills += 1
            assert agent.cursor.exists(), "the cursor file is written as packets are handled"
            agent.start()
        ids = await sender
        await agent.wait_handled(N)
        return ids

    try:
        ids = asyncio.run(main())
        fx = asyncio.run(effects(server.url))
        assert_exactly_once(fx, ids, agent.ack)
        lines = agent.lines()
        assert set(lines) == set(ids)
        # Only a packet in hand when the process died is handed again after the restart
        # (its reply and work move were deduplicated by their keys, as counted above).
        assert len(lines) - len(ids) <= kills, f"{len(lines) - len(ids)} packets handed again after {kills} kills"
    finally:
        agent.kill()


def test_gap_notices_of_a_slow_reader_are_filled_from_the_log(tmp_path: Path) -> None:
    # A gateway that queues at most 10 events per client, and a proxy that stops
    # forwarding to the agent: the gateway drops the oldest queued events and sends
    # gap notices (ERR-014); the agent replays exactly those ranges.
    server = Server(tmp_path, buffer=10).start()
    try:

        async def main() -> tuple[list[str], AgentProcess]:
            proxy = await Proxy(server.port, rcvbuf=4096).start()
            agent = AgentProcess(proxy.url, tmp_path, ack=True).start()
            try:
                await asyncio.to_thread(wait_subscribed, server)
                proxy.pause()
                ids = await send_load(server.url, N, "gap")
                proxy.resume()
                await agent.wait_handled(N)
                assert agent.stop() == 0
                return ids, agent
            except BaseException:
                agent.kill()
                raise
            finally:
                await proxy.close()

        ids, agent = asyncio.run(main())
        fx = asyncio.run(effects(server.url))
        assert_exactly_once(fx, ids, agent.ack)
        assert sorted(agent.lines()) == sorted(ids)
        stats = json.loads((tmp_path / "handled.txt.stats").read_text())
        assert stats["gaps"] >= 1, f"the gateway sent gap notices: {stats}"
        assert dropped(server) > 0, "the gateway dropped events for the slow reader"
    finally:
        server.kill()


def metrics(server: Server) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as r:
        return r.read().decode()


def dropped(server: Server) -> float:
    total = 0.0
    for line in metrics(server).splitlines():
        if line.startswith("orchestrata_gateway_events_dropped_total"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_subscribed(server: Server) -> None:
    """Until the agent's cxp.traffic subscription is live (gateway.clients lists it)."""

    async def subscribed() -> bool:
        async with await Gateway.connect(server.url, token=OPERATOR) as gw:
            clients = (await gw.gateway_clients())["clients"]  # type: ignore[typeddict-item]
            return any(c.get("subscriptions") for c in clients)

    for _ in range(600):
        if asyncio.run(subscribed()):
            return
        time.sleep(0.1)
    raise AssertionError("the agent never subscribed")
