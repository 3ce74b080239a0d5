"""Every gateway method round-trips through its typed coroutine against a real `up`,
and each family answers at least one typed error (issue 62, item 5).

`ROUND_TRIPS` records which methods a test called and how they answered; the last
test checks that every method of the schemas is in it."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
import websockets
from conftest import ADMIN, AGENT, HMAC_CLIENT, OPERATOR, VIEWER

import orchestrata as o
from orchestrata import Gateway

#: method -> "ok" or the error class it answered, for every call the tests made.
ROUND_TRIPS: dict[str, set[str]] = {}


def note(method: str, outcome: str) -> None:
    ROUND_TRIPS.setdefault(method, set()).add(outcome)


async def ok(gw: Gateway, method: str, **params: Any) -> Any:
    result = await getattr(gw, method.replace(".", "_"))(**params)
    assert isinstance(result, dict), f"{method}: {result!r}"
    note(method, "ok")
    return result


async def fails(gw: Gateway, cls: type[o.GatewayError], reason: str | None, method: str, **params: Any) -> o.GatewayError:
    with pytest.raises(cls) as caught:
        await getattr(gw, method.replace(".", "_"))(**params)
    e = caught.value
    if reason is not None:
        assert e.reason == reason, f"{method}: {e} {e.data}"
    assert e.code == cls.code, f"{method}: {e}"
    note(method, cls.__name__)
    return e


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_auth_static_token_hmac_and_refusals(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw:
            assert gw.auth["authenticated"] is True and gw.auth["scope"] == "read_write"
        async with await Gateway.connect(shared_server.url, hmac=HMAC_CLIENT) as gw:
            assert gw.auth["identity"] == HMAC_CLIENT[0], gw.auth
        note("auth.authenticate", "ok")
        with pytest.raises(o.InvalidCredentials) as e:
            await Gateway.connect(shared_server.url, token="wrong")
        assert e.value.reason == "invalid_token" and e.value.contract == "ERR-002"
        with pytest.raises(o.InvalidCredentials) as e:
            await Gateway.connect(shared_server.url, hmac=(HMAC_CLIENT[0], "not-the-secret"))
        assert e.value.reason == "invalid_signature"
        note("auth.authenticate", "InvalidCredentials")
        # ERR-001: a call before auth.authenticate (a bare socket: the client always
        # authenticates first) maps to AuthenticationRequired.
        async with websockets.connect(shared_server.url) as ws:
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "gateway.ping", "params": {}}))
            err = o.errors.from_error(json.loads(await ws.recv())["error"])
        assert isinstance(err, o.AuthenticationRequired) and err.contract == "ERR-001"

    run(main())


def test_gateway_and_config_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw:
            info = await ok(gw, "gateway.info")
            assert "cxp.traffic" in info["topics"]
            assert (await ok(gw, "gateway.ping"))["server_timestamp"].endswith("Z")
            assert (await ok(gw, "gateway.clients"))["total"] >= 1
            sub = await ok(gw, "gateway.subscribe", topic="volk.lifecycle")
            await ok(gw, "gateway.unsubscribe", subscription_id=sub["subscription_id"])
            await fails(gw, o.InvalidParams, "unknown_subscription", "gateway.unsubscribe", subscription_id="sub-none")
            await fails(gw, o.InvalidParams, "invalid_params", "gateway.subscribe", topic="no.such.topic")
            await fails(gw, o.EpochMismatch, "epoch_mismatch", "gateway.subscribe", topic="volk.lifecycle", since={"epoch": "not-this-one", "sequence": 0})
            replay = await ok(gw, "gateway.replay", topic="volk.lifecycle", sequence_from=0, sequence_to=5)
            assert replay["events"] and replay["events"][0]["sequence"] == 0
            await fails(gw, o.InvalidParams, "invalid_range", "gateway.replay", topic="volk.lifecycle", sequence_from=5, sequence_to=1)
            assert (await ok(gw, "config.get", path="gateway.max_clients"))["value"] == 100
            await fails(gw, o.InvalidParams, "unknown_config_path", "config.get", path="no.such.key")
            with pytest.raises(o.MethodNotFound) as e:
                await gw.call("no.such_method")
            assert e.value.reason == "method_not_found"

    run(main())


def test_cxp_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw, await Gateway.connect(
            shared_server.url, token=AGENT
        ) as agent, await Gateway.connect(shared_server.url, token=VIEWER) as viewer:
            sub = await ok(agent, "cxp.subscribe", filters={"volk_id": "U:Vz"})
            sent = await ok(gw, "cxp.send", target="U:Vz", subject="round_trip", payload={"n": 1})
            keyed = await gw.cxp_send(target="U:Vz", subject="round_trip", payload={"n": 2}, idempotency_key="rt-1")
            again = await gw.cxp_send(target="U:Vz", subject="round_trip", payload={"n": 2}, idempotency_key="rt-1")
            assert again["message_id"] == keyed["message_id"] and again.get("duplicate") is True, again
            await fails(gw, o.IdempotencyKeyReused, "idempotency_key_reused", "cxp.send", target="U:Vz", payload={"n": 3}, idempotency_key="rt-1")
            status = await ok(gw, "cxp.status", thread_id=sent["thread_id"])
            assert status["delivery_status"] == "queued", status
            work = await ok(agent, "cxp.work", message_id=sent["message_id"], status="in_progress", notes="on it")
            assert work["work_status"] == "in_progress"
            # The recipient's ack delivers the queued packet, then acknowledges it; a repeat is refused.
            acked = await ok(agent, "cxp.ack", message_id=sent["message_id"])
            assert acked["status"] == "acknowledged", acked
            assert (await gw.cxp_status(thread_id=sent["thread_id"]))["delivery_status"] == "acknowledged"
            await fails(agent, o.InvalidTransition, "invalid_transition", "cxp.ack", message_id=sent["message_id"])
            await ok(agent, "cxp.unsubscribe", subscription_id=sub["subscription_id"])
            e = await fails(gw, o.UnknownTargetVolk, "unknown_target_volk", "cxp.send", target="U:Zz", payload={})
            assert e.contract == "ERR-006"
            await fails(agent, o.NotActingAs, "not_acting_as", "cxp.send", from_="U:Cx", target="U:Ox", payload={})
            await fails(viewer, o.InsufficientScope, "insufficient_scope", "cxp.send", target="U:Vz", payload={})
            await fails(gw, o.InvalidParams, "unknown_thread", "cxp.status", thread_id="no-such-thread")
            await fails(viewer, o.InvalidParams, "unknown_subscription", "cxp.unsubscribe", subscription_id="sub-x")
            await fails(viewer, o.InvalidParams, None, "cxp.subscribe", filters={"volk_id": "not-an-alias"})
            await fails(agent, o.InvalidParams, "unknown_packet", "cxp.work", message_id=str(uuid.uuid4()), status="in_progress")

    run(main())


def test_volk_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=ADMIN) as admin, await Gateway.connect(
            shared_server.url, token=OPERATOR
        ) as gw:
            assert (await ok(gw, "volk.list", limit=100))["total"] >= 9
            assert (await ok(gw, "volk.get", alias="U:Vz"))["alias"] == "U:Vz"
            await fails(gw, o.InvalidParams, "unknown_volk", "volk.get", alias="U:Qq")
            reg = await ok(admin, "volk.register", alias="U:Py", capabilities=["python"], parent="U:Ox")
            assert reg["registered"] is True
            # Registering a taken alias: the policy refuses it.
            await fails(admin, o.GovernanceDenied, "governance_denied", "volk.register", alias="U:Py", capabilities=["python"])
            await fails(gw, o.InsufficientScope, "insufficient_scope", "volk.register", alias="U:Pz", capabilities=[])
            assert (await ok(admin, "volk.deregister", alias="U:Py", reason="done"))["deregistered"] is True
            await fails(admin, o.GovernanceDenied, "governance_denied", "volk.deregister", alias="U:Qq")

    run(main())
