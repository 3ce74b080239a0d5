"""A synchronous facade for scripts and notebooks.

    from orchestrata.sync import Gateway
    with Gateway.connect("ws://127.0.0.1:18790/", token=TOKEN) as gw:
        print(gw.gateway_ping())
        for packet in gw.volk("U:Vz").inbox():
            packet.reply({"echo": packet.payload})

The asyncio client runs on an event loop in a background thread; every coroutine
method becomes a blocking call, and objects it returns (a Volk, a Packet) are wrapped
the same way. Errors are the same classes as the asyncio client's.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from . import client as _client
from .agent import Packet, Volk


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="orchestrata-sync", daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class _Blocking:
    """Wraps an object of the asyncio client: coroutine methods block."""

    def __init__(self, target: Any, loop: _Loop):
        self._target = target
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            def blocking(*args: Any, **kwargs: Any) -> Any:
                return _wrap(self._loop.run(value(*args, **kwargs)), self._loop)
            return blocking
        if callable(value):
            def plain(*args: Any, **kwargs: Any) -> Any:
                return _wrap(value(*args, **kwargs), self._loop)
            return plain
        return value

    def __iter__(self) -> Any:
        while True:
            try:
                yield _wrap(self._loop.run(self._target.__anext__()), self._loop)
            except StopAsyncIteration:
                return


def _wrap(value: Any, loop: _Loop) -> Any:
    return _Blocking(value, loop) if isinstance(value, (Volk, Packet)) else value


class Gateway(_Blocking):
    """The blocking client: ``Gateway.connect(url, token=...)``, then any method."""

    @classmethod
    def connect(cls, url: str, **options: Any) -> "Gateway":
        loop = _Loop()
        try:
            gw = loop.run(_client.Gateway.connect(url, **options))
        except BaseException:
            loop.stop()
            raise
        return cls(gw, loop)

    def volk(self, alias: str, **options: Any) -> Any:
        async def make() -> Any:
            return self._target.volk(alias, **options)
        return _Blocking(self._loop.run(make()), self._loop)

    def close(self) -> None:
        try:
            self._loop.run(self._target.close())
        finally:
            self._loop.stop()

    def drain(self, timeout: float = 30.0) -> None:
        try:
            self._loop.run(self._target.drain(timeout))
        finally:
            self._loop.stop()

    def __enter__(self) -> "Gateway":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
