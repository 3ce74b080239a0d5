"""A TCP proxy on loopback that can cut every connection through it (``cut()``): the
agent's link drops mid-stream while the server keeps running."""

from __future__ import annotations

import asyncio


class Proxy:
    def __init__(self, target_port: int):
        self.target_port = target_port
        self.port = 0
        self.cuts = 0
        self._server: asyncio.base_events.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    async def start(self) -> "Proxy":
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._links |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._links -= {writer, up_writer}

    def cut(self) -> int:
        """Aborts every open connection (RST, no WebSocket close); returns how many."""
        links = list(self._links)
        for w in links:
            w.transport.abort()
        self._links.clear()
        self.cuts += 1
        return len(links) // 2

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
