"""A TCP proxy on loopback that can cut every connection through it (``cut()``): the
agent's link drops mid-stream while the server keeps running."""

from __future__ import annotations

import asyncio
import socket


class Proxy:
    def __init__(self, target_port: int, rcvbuf: int | None = None):
        self.target_port = target_port
        self.rcvbuf = rcvbuf
        self._flowing = asyncio.Event()
        self._flowing.set()
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
            sock = socket.socket()
            if self.rcvbuf is not None:
                # A small window toward the server: a paused reader fills the server's
                # queue for this client instead of kernel buffers.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.target_port))
            up_reader, up_writer = await asyncio.open_connection(sock=sock)
        except OSError:
            writer.transport.abort()
            return
        self._links |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, gated: bool) -> None:
            try:
                while True:
                    if gated:
                        await self._flowing.wait()
                    data = await src.read(65536)
                    if not data:
                        break
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True))
        self._links -= {writer, up_writer}

    def pause(self) -> None:
        """Stops forwarding what the server sends (the client looks like a slow reader)."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

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
