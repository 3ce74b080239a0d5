"""`Gateway`: one WebSocket to the gateway that survives restarts and dropped links.

- ``await Gateway.connect(url, token=...)`` (or ``hmac=(client_id, secret)``) opens,
  authenticates and returns the client; ``async with`` closes it.
- ``await gw.call(method, params)`` or the typed coroutines (``gw.cxp_send(...)``).
  Answers are matched by id, so calls may run concurrently (pipelined).
- When the connection drops, the client reconnects with exponential backoff and full
  jitter, authenticates again and lets every subscriber (``Volk``) subscribe again from
  its position. Calls wait for the new connection. A call whose answer was lost is sent
  again when that is safe: a read, or a mutating call with an ``idempotency_key`` (the
  client puts one on every method that takes one, and keeps it across attempts, so the
  gateway executes it once). A mutating call without one raises ``ConnectionLost``.
- A ``RateLimited`` answer was not executed: the call is sent again after
  ``retry_after_ms``. A safe call answered ``view_lagging`` or ``log_unavailable`` (a
  server catching up after a restart) is sent again with backoff for about a minute.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import hmac as _hmac
import itertools
import json
import logging
import random
import uuid
from typing import Any, Protocol

import websockets

from . import errors
from ._methods import KEYED, Methods

log = logging.getLogger("orchestrata")

#: Methods that change nothing: always safe to send again.
READS: frozenset[str] = frozenset(
    """gateway.info gateway.ping gateway.clients gateway.replay gateway.subscribe
    gateway.unsubscribe cxp.subscribe cxp.unsubscribe config.get cxp.status volk.list
    volk.get workflow.get agents.escalations session.list session.get
    session.portfolio.stats governance.query governance.evaluate governance.rules
    knowledge.nodes knowledge.relationships knowledge.query""".split()
)


#: -32603 reasons of a server that is catching up, not failing: a safe call is retried
#: (with backoff, TRANSIENT_TRIES times, about a minute) instead of raised.
TRANSIENT: frozenset[str] = frozenset({"view_lagging", "log_unavailable", "kernel_no_answer"})
TRANSIENT_TRIES = 36


class Subscriber(Protocol):
    """What the client tells a subscriber (a ``Volk``) about its connections."""

    async def on_connected(self, gw: "Gateway") -> None: ...
    def on_event(self, params: dict[str, Any]) -> None: ...
    def on_gap(self, params: dict[str, Any]) -> None: ...


class _Lost(Exception):
    """The connection carrying a request went away before its answer."""


def hmac_params(client_id: str, secret: str) -> dict[str, Any]:
    """``auth.authenticate`` params of strategy ``hmac``: the secret signs, never travels."""
    ts = datetime.datetime.now(datetime.timezone.utc).isoformat()
    nonce = uuid.uuid4().hex
    sig = _hmac.new(secret.encode(), (ts + nonce + client_id).encode(), hashlib.sha256).hexdigest()
    return {"strategy": "hmac", "client_id": client_id, "timestamp": ts, "nonce": nonce, "signature": sig}


class Gateway(Methods):
    """A client of the gateway. Create it with :meth:`connect`."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        hmac: tuple[str, str] | None = None,
        client_name: str = "orchestrata-python",
        reconnect: bool = True,
        backoff_min: float = 0.1,
        backoff_max: float = 5.0,
        ssl: Any = None,
    ):
        if (token is None) == (hmac is None):
            raise ValueError("give exactly one of token=... or hmac=(client_id, secret)")
        self.url = url
        self._token = token
        self._hmac = hmac
        self._metadata = {"client_name": client_name, "client_version": "0.1.0", "purpose": "agent"}
        self._reconnect = reconnect
        self._backoff = (backoff_min, backoff_max)
        self._ssl = ssl
        self._ids = itertools.count(1)
        self._ws: Any = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._connected = asyncio.Event()
        self._closed = False
        self._fatal: BaseException | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._subscribers: list[Subscriber] = []
        self._volks: dict[str, Any] = {}
        #: The last ``auth.authenticate`` result.
        self.auth: dict[str, Any] = {}
        #: Counters: connects, reconnects, retried calls.
        self.stats = {"connects": 0, "reconnects": 0, "retries": 0}

    # --- life cycle ---------------------------------------------------------------------
    @classmethod
    async def connect(cls, url: str, **options: Any) -> "Gateway":
        """Connects and authenticates; raises the gateway's error if that fails."""
        gw = cls(url, **options)
        await gw._open()
        return gw

    async def __aenter__(self) -> "Gateway":
        if self._supervisor is None:
            await self._open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _open(self) -> None:
        await self._dial()
        self._supervisor = asyncio.create_task(self._run(), name="orchestrata-gateway")

    async def close(self) -> None:
        """Closes the connection for good; waiting calls raise ``ClientClosed``."""
        self._closed = True
        self._connected.set()
        ws = self._ws
        if ws is not None:
            await ws.close(1000, "client closed")
        if self._supervisor is not None:
            self._supervisor.cancel()
            try:
                await self._supervisor
            except (asyncio.CancelledError, Exception):
                pass
        self._fail_pending(errors.ClientClosed("client closed"))

    async def drain(self, timeout: float = 30.0) -> None:
        """Graceful shutdown: every Volk stops taking packets once its current one is
        handled and saves its cursor; calls in flight finish; then the client closes."""
        for volk in list(self._volks.values()):
            await volk.drain(timeout)
        pending = [f for f in self._pending.values() if not f.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)
        await self.close()

    # --- subscribers -------------------------------------------------------------------
    def volk(self, alias: str, *, cursor: str | None = None, start: str = "earliest") -> Any:
        """The agent side of Volk ``alias``: ``async for packet in volk.inbox()``.

        ``cursor``: a file keeping the last handled (epoch, sequence), so a restarted
        process resumes where this one stopped; without it the position lives in memory.
        ``start``: where a Volk without a position begins, ``"earliest"`` (every packet
        in the log) or ``"latest"`` (only packets sent from now on).
        """
        from .agent import Volk

        if alias not in self._volks:
            self._volks[alias] = Volk(self, alias, cursor=cursor, start=start)
        return self._volks[alias]

    def add_subscriber(self, sub: Subscriber) -> None:
        self._subscribers.append(sub)

    # --- calls -------------------------------------------------------------------------
    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Calls ``method``; returns its result or raises a ``GatewayError``."""
        params = dict(params or {})
        if method in KEYED and "idempotency_key" not in params:
            params["idempotency_key"] = uuid.uuid4().hex
        retry_safe = method in READS or "idempotency_key" in params
        transient = 0
        while True:
            ws = await self._ready()
            try:
                return await self._request(ws, method, params)
            except _Lost:
                # Give the loop a turn: the supervisor notices the drop and reconnects.
                await asyncio.sleep(0)
                if not retry_safe:
                    raise errors.ConnectionLost(f"{method}: connection lost before the answer") from None
                self.stats["retries"] += 1
            except errors.RateLimited as e:
                self.stats["retries"] += 1
                await asyncio.sleep(e.retry_after)
            except errors.InternalError as e:
                # A server catching up (its views or log after a restart) answers
                # view_lagging / log_unavailable; a safe call is asked again, a while.
                if not retry_safe or e.reason not in TRANSIENT or transient >= TRANSIENT_TRIES:
                    raise
                self.stats["retries"] += 1
                await asyncio.sleep(min(2.0, 0.05 * 2**transient))
                transient += 1

    async def call_now(self, method: str, params: dict[str, Any]) -> Any:
        """Calls ``method`` on the connection being set up (subscribers resubscribing
        before the client reports itself connected); no retry."""
        if self._ws is None:
            raise _Lost()
        return await self._request(self._ws, method, params)

    async def _ready(self) -> Any:
        while True:
            if self._fatal is not None:
                raise self._fatal
            if self._closed:
                raise errors.ClientClosed("client closed")
            if self._connected.is_set() and self._ws is not None:
                return self._ws
            self._connected.clear()
            await self._connected.wait()

    async def _request(self, ws: Any, method: str, params: dict[str, Any]) -> Any:
        rid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        except websockets.ConnectionClosed:
            self._pending.pop(rid, None)
            self._dropped(ws)
            raise _Lost() from None
        try:
            return await fut
        finally:
            self._pending.pop(rid, None)

    def _dropped(self, ws: Any) -> None:
        """`ws` is gone: calls wait for the next connection instead of using it."""
        if self._ws is ws:
            self._ws = None
            if not self._closed and self._fatal is None:
                self._connected.clear()

    def _fail_pending(self, exc: BaseException) -> None:
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()

    # --- the connection ----------------------------------------------------------------
    async def _dial(self) -> Any:
        """Opens a socket, authenticates on it and resubscribes every subscriber."""
        extra = {"ssl": self._ssl} if self._ssl is not None else {}
        ws = await websockets.connect(self.url, max_size=None, open_timeout=10, **extra)
        reader = asyncio.create_task(self._read(ws), name="orchestrata-reader")
        try:
            if self._token is not None:
                auth = {"strategy": "static_token", "token": self._token}
            else:
                assert self._hmac is not None
                auth = hmac_params(*self._hmac)
            self.auth = await self._request(ws, "auth.authenticate", {**auth, "client_metadata": self._metadata})
            self._ws = ws
            for sub in list(self._subscribers):
                await sub.on_connected(self)
        except BaseException:
            self._ws = None
            reader.cancel()
            await ws.close()
            raise
        self._reader = reader
        self.stats["connects"] += 1
        self._connected.set()
        return ws

    async def _run(self) -> None:
        """Keeps a connection up until ``close()``: waits for the socket to drop, then
        reconnects with backoff and jitter."""
        attempt = 0
        while not self._closed:
            await self._reader
            self._connected.clear()
            log.info("connection to %s lost", self.url)
            self._ws = None
            if self._closed or not self._reconnect:
                self._fatal = self._fatal or errors.ClientClosed("connection closed")
                self._connected.set()
                return
            while not self._closed:
                lo, hi = self._backoff
                await asyncio.sleep(random.uniform(0, min(hi, lo * 2**attempt)))
                attempt = min(attempt + 1, 30)
                try:
                    await self._dial()
                    self.stats["reconnects"] += 1
                    log.info("reconnected to %s", self.url)
                    attempt = 0
                    break
                except (errors.Unauthorized, errors.InvalidParams) as e:
                    # The credentials or a subscription are refused: retrying cannot help.
                    self._fatal = e
                    self._connected.set()
                    return
                except (OSError, asyncio.TimeoutError, websockets.WebSocketException, _Lost, errors.GatewayError) as e:
                    log.info("reconnect to %s failed: %s", self.url, e)

    async def _read(self, ws: Any) -> None:
        try:
            async for frame in ws:
                try:
                    msg = json.loads(frame)
                except (TypeError, ValueError):
                    continue
                for m in msg if isinstance(msg, list) else [msg]:
                    if isinstance(m, dict):
                        self._dispatch(m)
        except websockets.ConnectionClosed:
            pass
        finally:
            code, reason = getattr(ws, "close_code", None), getattr(ws, "close_reason", None) or ""
            exc = errors.from_close(code, reason) if code in errors.BY_CLOSE else _Lost()
            if code in errors.BY_CLOSE and self._fatal is None and code != 1013:
                self._fatal = exc
            self._dropped(ws)
            self._fail_pending(exc)

    def _dispatch(self, m: dict[str, Any]) -> None:
        rid = m.get("id")
        if rid is not None:
            fut = self._pending.get(rid) if isinstance(rid, int) else None
            if fut is not None and not fut.done():
                if "error" in m:
                    fut.set_exception(errors.from_error(m["error"]))
                else:
                    fut.set_result(m.get("result"))
            return
        params = m.get("params")
        if not isinstance(params, dict):
            return
        if m.get("method") == "gateway.gap":
            for sub in self._subscribers:
                sub.on_gap(params)
        elif "sequence" in params and "topic" in params:
            for sub in self._subscribers:
                sub.on_event(params)
