"""The agent under test, in its own process: handles U:Vz's packets (work in_progress,
reply with the payload; acknowledge first with ``ack``) and appends each handled
message id to a file.

    python echo_agent.py URL TOKEN CURSOR_FILE HANDLED_FILE [ack]
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrata import Gateway  # noqa: E402


async def main(url: str, token: str, cursor: str, handled: str, ack: bool) -> None:
    gw = await Gateway.connect(url, token=token, backoff_max=0.5)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(gw.drain()))
    # SIGUSR1: every task's stack to stderr (a test that waits in vain shows where).
    loop.add_signal_handler(signal.SIGUSR1, lambda: [t.print_stack(file=sys.stderr) for t in asyncio.all_tasks()])
    volk = gw.volk("U:Vz", cursor=cursor)
    with open(handled, "a") as out:
        async for packet in volk.inbox():
            if ack:
                await packet.ack()
            await packet.work("in_progress")
            await packet.reply({"echo": packet.payload})
            out.write(packet.message_id + "\n")
            out.flush()
    await gw.close()
    Path(handled + ".stats").write_text(json.dumps(volk.stats))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    asyncio.run(main(*sys.argv[1:5], ack=sys.argv[5:6] == ["ack"]))
