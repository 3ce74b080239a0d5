"""The synchronous facade: the same client, blocking, for scripts and notebooks."""

from __future__ import annotations

import pytest
from conftest import AGENT, OPERATOR

import orchestrata
from orchestrata.sync import Gateway


def test_a_script_sends_and_an_agent_loop_answers_without_asyncio(shared_server) -> None:
    with Gateway.connect(shared_server.url, token=OPERATOR) as gw:
        assert gw.gateway_ping()["server_timestamp"].endswith("Z")
        sent = gw.cxp_send(target="U:Vz", subject="sync", payload={"from": "script"}, idempotency_key="sync-1")
        with pytest.raises(orchestrata.UnknownTargetVolk) as e:
            gw.cxp_send(target="U:Zz", payload={})
        assert e.value.reason == "unknown_target_volk" and e.value.code == -32602

    with Gateway.connect(shared_server.url, token=AGENT) as agent:
        for packet in agent.volk("U:Vz").inbox():
            if packet.message_id == sent["message_id"]:
                reply = packet.reply({"ok": True})
                break
    assert reply["thread_id"] == sent["thread_id"]
    assert reply["status"] in ("queued", "sent")
