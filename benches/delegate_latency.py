#!/usr/bin/env python3
"""End-to-end latency of `agents.delegate` through the public API (issue 16 targets).

A client in its own process (real WebSocket, `pip install websockets`) acting as the
senior subscribes to `cxp.traffic` packets with subject `synthesis`, then, ROUNDS times
one after another, calls `agents.delegate` with N juniors of one profile and measures
the time from sending the request to receiving the `synthesis` notification of that
task (spawn of every junior, its program's run, its `junior_result`, termination, the
synthesis packet: the whole fan-out as a client sees it). Prints p50/p95/p99/max.

    benches/delegate_latency.py ws://127.0.0.1:8790/ TOKEN SENIOR PROFILE N ROUNDS

The server needs `agents.drivers.PROFILE` configured and TOKEN acting as SENIOR (see
docs/performance.md for the configuration used there).
"""

import asyncio
import json
import statistics
import sys
import time

import websockets


async def main(url, token, senior, profile, juniors, rounds):
    async with websockets.connect(url, max_size=None) as ws:
        ids = iter(range(1, 10**9))
        pending = {}
        synth = {}
        arrived = {}

        async def reader():
            async for frame in ws:
                msg = json.loads(frame)
                if "id" in msg and msg["id"] in pending:
                    pending.pop(msg["id"]).set_result(msg)
                elif msg.get("method") == "cxp.traffic":
                    packet = msg["params"]["payload"].get("packet", {})
                    body = packet.get("payload")
                    if isinstance(body, dict) and "json" in body:
                        body = body["json"]  # a JSON packet payload
                    task = body.get("task_id") if isinstance(body, dict) else None
                    if task in synth:
                        synth[task].set_result(time.perf_counter())
                    elif task:
                        arrived[task] = time.perf_counter()

        async def call(method, params):
            i = next(ids)
            fut = asyncio.get_running_loop().create_future()
            pending[i] = fut
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}))
            answer = await fut
            if "error" in answer:
                raise RuntimeError(f"{method}: {answer['error']}")
            return answer["result"]

        task = asyncio.create_task(reader())
        await call("auth.authenticate", {"strategy": "static_token", "token": token})
        await call("cxp.subscribe", {"filters": {"subject": "synthesis"}})
        latencies = []
        for _ in range(rounds):
            started = time.perf_counter()
            done = asyncio.get_running_loop().create_future()
            answer = await call(
                "agents.delegate",
                {"senior": senior, "task": "measure me", "juniors": [profile] * juniors},
            )
            if answer["task_id"] in arrived:
                # The synthesis was read before the answer was handled.
                finished = arrived.pop(answer["task_id"])
            else:
                synth[answer["task_id"]] = done
                finished = await asyncio.wait_for(done, 60)
            latencies.append((finished - started) * 1000)
        task.cancel()
    latencies.sort()
    q = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))]
    print(
        f"agents.delegate juniors={juniors} rounds={rounds}: p50 {q(0.5):.1f} ms, "
        f"p95 {q(0.95):.1f} ms, p99 {q(0.99):.1f} ms, max {latencies[-1]:.1f} ms, "
        f"mean {statistics.mean(latencies):.1f} ms"
    )


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    url, token, senior, profile, n, rounds = sys.argv[1:]
    asyncio.run(main(url, token, senior, profile, int(n), int(rounds)))
