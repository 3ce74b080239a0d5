"""The agent loop: a Volk's inbox with gapless resume and exactly-once handling.

``volk = gw.volk("U:Vz", cursor="vz.cursor")``; ``async for packet in volk.inbox():``
yields every packet sent to the Volk, in log order, once:

- The Volk subscribes to ``cxp.traffic`` (``packet_sent`` events naming it). Its
  position is the (epoch, sequence) of the last event handled. After a reconnect it
  subscribes again ``since`` that position (the gateway replays the rest from the log);
  a gap notice (the gateway dropped events for a slow reader) is filled with
  ``gateway.replay`` of exactly that range, before any newer event. Without a position
  it starts from sequence 0 (``start="earliest"``) or from now (``"latest"``).
- Events at or below the position are dropped, so nothing is handed twice.
- A packet counts as handled when the loop asks for the next one (or on
  ``packet.done()``); the position is then saved (in the cursor file, if any).
- A process that dies while handling a packet gets that packet again after the restart.
  Its calls carry idempotency keys derived from the packet (``<message_id>:reply:1``),
  so a reply, ack or work move made before the crash is not made twice: the gateway
  answers the first one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from . import errors
from .cursor import CursorFile, Position

if TYPE_CHECKING:
    from .client import Gateway

log = logging.getLogger("orchestrata")

TOPIC = "cxp.traffic"
#: Sequences per ``gateway.replay`` call (below the gateway's scan budget and page size).
WINDOW = 10_000


class Packet:
    """A packet sent to the Volk, as the ``packet_sent`` event carried it."""

    def __init__(self, volk: "Volk", event: dict[str, Any], packet: dict[str, Any]):
        self.volk = volk
        self.event = event
        self.sequence: int = event["sequence"]
        self.epoch: str | None = event.get("epoch")
        self.message_id: str = packet.get("message_id", "")
        self.thread_id: str = packet.get("thread_id", "")
        self.from_agent: str = packet.get("from_agent", "")
        self.to_agent: str = packet.get("to_agent", "")
        self.subject: str = packet.get("subject", "")
        # The log's form: {"json": value} or {"binary": {...}} (bytes, base64).
        body = packet.get("payload")
        self.payload: Any = body["json"] if isinstance(body, dict) and set(body) == {"json"} else body
        self.priority: int | None = packet.get("priority")
        self.metadata: dict[str, Any] = packet.get("metadata") or {}
        self.raw = packet
        self._ordinals: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Packet({self.sequence}, {self.from_agent}->{self.to_agent}, {self.subject!r}, {self.message_id})"

    def _key(self, op: str) -> str:
        # The n-th call of `op` while handling this packet: the same calls in the same
        # order after a restart derive the same keys, so the gateway executes them once.
        n = self._ordinals.get(op, 0) + 1
        self._ordinals[op] = n
        return f"{self.message_id}:{op}:{n}"

    async def ack(self) -> dict[str, Any]:
        """``cxp.ack``: the Volk acknowledges the delivered packet."""
        return await self.volk.gw.cxp_ack(message_id=self.message_id, idempotency_key=self._key("ack"))  # type: ignore[return-value]

    async def work(
        self, status: str, *, notes: str | None = None, assigned_to: str | None = None, resolution: Any = None
    ) -> dict[str, Any]:
        """``cxp.work``: moves the packet's work status (``in_progress``, ``resolved``...)."""
        return await self.volk.gw.cxp_work(  # type: ignore[return-value]
            message_id=self.message_id,
            status=status,  # type: ignore[arg-type]
            notes=notes,
            assigned_to=assigned_to,
            resolution=resolution,
            idempotency_key=self._key("work"),
        )

    async def reply(self, payload: Any, *, subject: str | None = None, priority: int | None = None) -> dict[str, Any]:
        """``cxp.send`` back to the sender, in the packet's thread, ``in_reply_to`` it.

        A repeat after a restart answers the first reply (``duplicate: true``); if the
        handler now builds another payload, the first reply stands and this answers
        ``{"duplicate": true, "reused_key": true}``."""
        key = self._key("reply")
        try:
            return await self.volk.gw.cxp_send(  # type: ignore[return-value]
                target=self.from_agent,
                from_=self.volk.alias,
                payload=payload,
                subject=subject or self.subject,
                priority=priority,
                thread_id=self.thread_id,
                in_reply_to=self.message_id,
                idempotency_key=key,
            )
        except errors.IdempotencyKeyReused:
            return {"duplicate": True, "reused_key": True, "idempotency_key": key}

    async def done(self) -> None:
        """Marks the packet handled now (otherwise: when the loop asks for the next)."""
        self.volk._commit(self)


class Volk:
    """One Volk's inbox. Create it with ``gw.volk(alias, cursor=..., start=...)``."""

    def __init__(self, gw: "Gateway", alias: str, *, cursor: str | None = None, start: str = "earliest"):
        if start not in ("earliest", "latest"):
            raise ValueError("start is 'earliest' or 'latest'")
        self.gw = gw
        self.alias = alias
        self.start = start
        self.filters = {"volk_id": alias, "event_type": "packet_sent"}
        self._cursor = CursorFile(cursor, alias, TOPIC) if cursor else None
        pos = self._cursor.load() if self._cursor else Position()
        #: The epoch of the log and the last sequence handled (None: nothing yet).
        self.epoch: str | None = pos.epoch
        self.position: int | None = pos.sequence
        self._received: int | None = None
        self._queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self._buffer: deque[tuple[Any, ...]] = deque()
        self._outstanding: Packet | None = None
        self._started = False
        self._draining = False
        self._in_next = False
        self._stopped = asyncio.Event()
        self.subscription_id: str | None = None
        self._window = WINDOW
        self._held: list[tuple[Any, ...]] | None = None
        #: handed: packets given to the loop; duplicates: events dropped as already
        #: handled; gaps: gap notices filled; lost: events retention dropped before
        #: they could be replayed.
        self.stats = {"handed": 0, "duplicates": 0, "gaps": 0, "lost": 0, "resets": 0}

    def inbox(self) -> "Volk":
        """The packets sent to this Volk: ``async for packet in volk.inbox()``."""
        return self

    def __aiter__(self) -> "Volk":
        return self

    async def send(self, target: str, payload: Any, **fields: Any) -> dict[str, Any]:
        """``cxp.send`` from this Volk (``subject``, ``priority``, ``thread_id``...)."""
        return await self.gw.cxp_send(target=target, from_=self.alias, payload=payload, **fields)  # type: ignore[return-value]

    # --- subscription -------------------------------------------------------------------
    async def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self.gw.add_subscriber(self)
        await self._subscribe(self.gw.call)

    async def on_connected(self, gw: "Gateway") -> None:
        if self._started and not self._draining:
            await self._subscribe(gw.call_now)

    async def _subscribe(self, call: Any) -> None:
        # Events that arrive while subscribing wait behind the markers this puts in the
        # queue (a catch-up must come before the live events it precedes in the log).
        self._held = []
        try:
            await self._subscribe_held(call)
        finally:
            held, self._held = self._held, None
            for item in held:
                self._queue.put_nowait(item)

    def _enqueue(self, item: tuple[Any, ...]) -> None:
        if self._held is not None:
            self._held.append(item)
        else:
            self._queue.put_nowait(item)

    async def _subscribe_held(self, call: Any) -> None:
        known = [s for s in (self._received, self.position) if s is not None]
        since = max(known) if known else None
        params: dict[str, Any] = {"filters": self.filters}
        if since is not None and self.epoch is not None:
            try:
                r = await call("cxp.subscribe", {**params, "since": {"epoch": self.epoch, "sequence": since}})
            except errors.EpochMismatch as e:
                log.warning("%s: the log was recreated (epoch %s): starting over", self.alias, e.data.get("epoch"))
                self._queue.put_nowait(("reset", e.data.get("epoch")))
                self._received = None
                self.epoch = e.data.get("epoch")
                r = await call("cxp.subscribe", params)
                self._queue.put_nowait(("catchup",))
            except errors.PositionTruncated as e:
                first = int(e.data.get("first_sequence", 0))
                self._queue.put_nowait(("lost", since + 1, first - 1))
                self._received = first - 1
                r = await call("cxp.subscribe", {**params, "since": {"epoch": self.epoch, "sequence": first - 1}})
        else:
            r = await call("cxp.subscribe", params)
            if self.start == "earliest":
                self._queue.put_nowait(("catchup",))
            else:
                live = r.get("live_from_sequence")
                if isinstance(live, int) and live > 0:
                    self._received = max(self._received or 0, live - 1)
        self.subscription_id = r.get("subscription_id")
        if self.epoch is None:
            self.epoch = r.get("epoch")

    def on_event(self, params: dict[str, Any]) -> None:
        if params.get("topic") != TOPIC:
            return
        seq = params.get("sequence")
        if isinstance(seq, int):
            self._received = seq if self._received is None else max(self._received, seq)
            self._enqueue(("event", params))

    def on_gap(self, params: dict[str, Any]) -> None:
        # Every Volk of the connection fills every gap of the topic: an event matching
        # several subscriptions is attributed to one of them, and so is its drop.
        if params.get("topic") != TOPIC:
            return
        lo, hi = params.get("sequence_from"), params.get("sequence_to")
        if isinstance(lo, int) and isinstance(hi, int):
            self._received = hi if self._received is None else max(self._received, hi)
            self._enqueue(("gap", lo, hi))

    # --- the loop -----------------------------------------------------------------------
    async def __anext__(self) -> Packet:
        self._in_next = True
        try:
            await self._start()
            if self._outstanding is not None:
                self._commit(self._outstanding)
            while True:
                if self._draining:
                    self._save()
                    self._stopped.set()
                    raise StopAsyncIteration
                item = self._buffer.popleft() if self._buffer else await self._queue.get()
                packet = await self._step(item)
                if packet is not None:
                    self._outstanding = packet
                    self.stats["handed"] += 1
                    return packet
        finally:
            self._in_next = False

    async def _step(self, item: tuple[Any, ...]) -> Packet | None:
        kind = item[0]
        if kind == "event":
            return self._take(item[1])
        if kind == "catchup":
            start = 0 if self.position is None else self.position + 1
            await self._replay(start, None)
        elif kind == "replay":
            await self._replay(item[1], item[2])
        elif kind == "gap":
            self.stats["gaps"] += 1
            start = item[1] if self.position is None else max(item[1], self.position + 1)
            if start <= item[2]:
                await self._replay(start, item[2])
        elif kind == "advance":
            self._advance(item[1])
        elif kind == "lost":
            self.stats["lost"] += 1
            log.error("%s: events %s..%s are no longer in the log (retention)", self.alias, item[1], item[2])
            self._advance(item[2])
        elif kind == "reset":
            self.stats["resets"] += 1
            self.epoch, self.position = item[1], None
            self._buffer.clear()
        return None

    async def _replay(self, lo: int, hi: int | None) -> None:
        """Reads one window of ``lo..hi`` (``None``: the log's end) into the buffer,
        with a marker that continues with the rest once the window is handled."""
        while True:
            to = lo + self._window - 1 if hi is None else min(hi, lo + self._window - 1)
            try:
                r = await self.gw.gateway_replay(topic=TOPIC, sequence_from=lo, sequence_to=to, filters=self.filters)
                break
            except errors.BudgetExceeded as e:
                # The gateway scans fewer events per call than a window: use its figure.
                budget = e.data.get("max_scan")
                smaller = budget if isinstance(budget, int) and 0 < budget < self._window else self._window // 2
                if smaller < 1:
                    raise
                self._window = smaller
        end = hi if hi is not None else (r.get("buffer_range") or {}).get("newest_sequence")
        for event in r.get("events", []):
            self._buffer.append(("event", event))
        if end is None:
            return
        if to < end:
            self._buffer.append(("replay", to + 1, hi))
        else:
            self._buffer.append(("advance", end))

    def _advance(self, sequence: int) -> None:
        if self.position is None or sequence > self.position:
            self.position = sequence

    def _take(self, event: dict[str, Any]) -> Packet | None:
        seq = event["sequence"]
        epoch = event.get("epoch")
        if self.epoch is not None and epoch is not None and epoch != self.epoch:
            return None
        if self.position is not None and seq <= self.position:
            self.stats["duplicates"] += 1
            return None
        self.position = seq
        self.epoch = self.epoch or epoch
        payload = event.get("payload") or {}
        packet = payload.get("packet") if isinstance(payload, dict) else None
        if event.get("event_type") != "packet_sent" or not isinstance(packet, dict):
            return None
        if packet.get("to_agent") != self.alias:
            return None
        return Packet(self, event, packet)

    # --- handled packets, shutdown ------------------------------------------------------
    def _commit(self, packet: Packet) -> None:
        if self._outstanding is packet:
            self._outstanding = None
            self._save()

    def _save(self) -> None:
        if self._cursor is not None:
            self._cursor.save(Position(self.epoch, self.position))

    async def drain(self, timeout: float = 30.0) -> None:
        """Stops after the packet being handled (its position is saved), then
        unsubscribes. The loop ends (``StopAsyncIteration``)."""
        self._draining = True
        self._queue.put_nowait(("stop",))
        if self._outstanding is not None or self._in_next:
            try:
                await asyncio.wait_for(self._stopped.wait(), timeout)
            except asyncio.TimeoutError:
                log.warning("%s: drain timed out with a packet in hand; it will be handed again", self.alias)
        else:
            self._save()
        if self.subscription_id is not None:
            try:
                await asyncio.wait_for(self.gw.cxp_unsubscribe(subscription_id=self.subscription_id), timeout)
            except (errors.GatewayError, asyncio.TimeoutError):
                pass
