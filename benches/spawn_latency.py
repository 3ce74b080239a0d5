#!/usr/bin/env python3
# REQ-005-FR9-001 REQ-005-NFR6-001
"""Spawn latency of juniors through the public API (issue 16 targets; spec 005 FR9).

A client in its own process (real WebSocket, `pip install websockets`) acting as the
parent subscribes to `cxp.traffic` packets with subject `junior_result`, then, ROUNDS
times one after another, calls `agents.spawn` on PROFILE with a one-line task and
measures two times per round:
- spawned: from sending `agents.spawn` to its answer (the junior is on the log,
  `spawned`, governed; its driver built, its task started);
- answered: from sending `agents.spawn` to the junior's `junior_result` notification
  (the driver started — a program, an HTTP call, a browser with its page — the task
  run and the answer sent through the kernel).
Prints p50/p95/p99/max of both.

    benches/spawn_latency.py ws://127.0.0.1:8790/ TOKEN PARENT PROFILE ROUNDS
"""

import asyncio
import json
import sys
import time

import websockets


def quantiles(name, values):
    values = sorted(values)
    q = lambda p: values[min(len(values) - 1, int(p * len(values)))]
    return (
        f"{name} p50 {q(0.5):.1f} ms, p95 {q(0.95):.1f} ms, p99 {q(0.99):.1f} ms, "
        f"max {values[-1]:.1f} ms"
    )


async def main(url, token, parent, profile, rounds):
    async with websockets.connect(url, max_size=None) as ws:
        ids = iter(range(1, 10**9))
        pending, waiting, arrived = {}, {}, {}

        async def reader():
            async for frame in ws:
                msg = json.loads(frame)
                if "id" in msg and msg["id"] in pending:
                    pending.pop(msg["id"]).set_result(msg)
                elif msg.get("method") == "cxp.traffic":
                    packet = msg["params"]["payload"].get("packet", {})
                    body = packet.get("payload")
                    if isinstance(body, dict) and "json" in body:
                        body = body["json"]
                    task = body.get("task_id") if isinstance(body, dict) else None
                    status = body.get("status") if isinstance(body, dict) else None
                    if status is not None and status != "succeeded":
                        print(f"junior failed: {body}", file=sys.stderr)
                    if task in waiting:
                        waiting.pop(task).set_result(time.perf_counter())
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

        reading = asyncio.create_task(reader())
        await call("auth.authenticate", {"strategy": "static_token", "token": token})
        await call("cxp.subscribe", {"filters": {"subject": "junior_result"}})
        spawned, answered = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            answer = await call("agents.spawn", {"parent": parent, "driver": profile, "task": "measure me"})
            spawned.append((time.perf_counter() - started) * 1000)
            task = answer["task_id"]
            if task in arrived:
                finished = arrived.pop(task)
            else:
                done = asyncio.get_running_loop().create_future()
                waiting[task] = done
                finished = await asyncio.wait_for(done, 60)
            answered.append((finished - started) * 1000)
            # Let the junior's termination land before the next spawn (five per senior).
            await asyncio.sleep(0.05)
        reading.cancel()
    print(f"agents.spawn driver={profile} rounds={rounds}: " + quantiles("spawned", spawned)
          + "; " + quantiles("answered", answered))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    url, token, parent, profile, rounds = sys.argv[1:]
    asyncio.run(main(url, token, parent, profile, int(rounds)))
