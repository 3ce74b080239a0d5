"""Round trips of the session, workflow, agents, governance and knowledge methods, and
the check that every method of the schemas was called (by these and test_methods.py:
run the whole directory)."""

from __future__ import annotations

import asyncio

from conftest import ADMIN, AGENT, OPERATOR, VIEWER
from test_methods import ROUND_TRIPS, fails, ok, run

import orchestrata as o
from orchestrata import Gateway
from orchestrata._methods import PARAMS


async def until(probe, seen) -> dict:  # type: ignore[no-untyped-def]
    """Polls `probe()` until `seen(result)`; the test fails after 60 s."""
    for _ in range(600):
        r = await probe()
        if seen(r):
            return r
        await asyncio.sleep(0.1)
    raise AssertionError(f"never reached: {r}")


def test_session_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw, await Gateway.connect(
            shared_server.url, token=VIEWER
        ) as viewer:
            s = await ok(gw, "session.open", portfolio="py-client", goals=["round trip"], context={"repo": "orchestrata"})
            sid = s["session_id"]
            assert (await ok(gw, "session.get", session_id=sid))["context"] == {"repo": "orchestrata"}
            assert (await ok(gw, "session.list", portfolio_id="py-client"))["total"] == 1
            upd = await ok(gw, "session.update_context", session_id=sid, context={"step": 2})
            assert upd["context"] == {"repo": "orchestrata", "step": 2}
            assert (await ok(gw, "session.assert_fact", session_id=sid, fact_type="decision", data={"x": 1}))["facts"] == 1
            assert (await ok(gw, "session.report_error", session_id=sid, code="tool_failed", message="no"))["errors"] == 1
            assert (await ok(gw, "session.close", session_id=sid, summary="done"))["status"] == "closed"
            stats = await ok(gw, "session.portfolio.stats", portfolio_id="py-client")
            assert stats["total_sessions"] == 1 and stats["closed_count"] == 1
            await fails(gw, o.InvalidParams, "unknown_session", "session.get", session_id="none")
            # Closing twice: the policy refuses a command on a closed session.
            await fails(gw, o.GovernanceDenied, "governance_denied", "session.close", session_id=sid)
            await fails(viewer, o.InsufficientScope, "insufficient_scope", "session.open", portfolio="py-client")
            # Writing to a session that is not open: the policy's `session_not_open`.
            await fails(gw, o.GovernanceDenied, "governance_denied", "session.update_context", session_id="none", context={})
            await fails(gw, o.GovernanceDenied, "governance_denied", "session.assert_fact", session_id="none", fact_type="t", data={})
            await fails(gw, o.GovernanceDenied, "governance_denied", "session.report_error", session_id="none", code="c", message="m")
            await fails(gw, o.InvalidParams, "unknown_portfolio", "session.portfolio.stats", portfolio_id="none")
            await fails(gw, o.InvalidParams, None, "session.list", status="neither")

    run(main())


def test_workflow_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw:
            run_ = await ok(gw, "workflow.start", name="pipeline", params={"task": "write main.rs"})
            wid = run_["workflow_id"]
            assert (await ok(gw, "workflow.get", workflow_id=wid))["workflow_id"] == wid
            await ok(gw, "workflow.pause", workflow_id=wid, reason="lunch")
            await ok(gw, "workflow.resume", workflow_id=wid)
            await ok(gw, "workflow.cancel", workflow_id=wid, reason="enough")
            assert (await gw.workflow_get(workflow_id=wid))["status"] == "cancelled"
            for method in ("workflow.get", "workflow.pause", "workflow.resume", "workflow.cancel"):
                await fails(gw, o.InvalidParams, None, method, workflow_id="wf-none")
            await fails(gw, o.InvalidParams, None, "workflow.start", name="no-such-workflow", params={})

    run(main())


def test_agents_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=AGENT) as vz, await Gateway.connect(
            shared_server.url, token=OPERATOR
        ) as gw:
            junior = await ok(vz, "agents.spawn", parent="U:Vz", driver="sleeper", lifespan={"deadline_ms": 600000})
            assert junior["status"] == "idle", junior
            assigned = await ok(vz, "agents.assign", junior=junior["alias"], task="wait a minute")
            assert assigned["status"] == "running"
            gone = await ok(vz, "agents.terminate", alias=junior["alias"], reason="no longer needed")
            assert gone["status"] == "terminated"
            d = await ok(vz, "agents.delegate", senior="U:Vz", task="shout this", juniors=["upper", "upper"])
            assert d["status"] == "running"
            await ok(gw, "workflow.start", name="pipeline", params={"task": "cannot be done"})
            queue = await until(lambda: gw.agents_escalations(), lambda r: r["total"] >= 1)
            note_ok = await ok(gw, "agents.escalations", status="open")
            assert note_ok["total"] == queue["total"]
            eid = queue["escalations"][0]["escalation_id"]
            done = await ok(gw, "agents.resolve_escalation", escalation_id=eid, decision="drop it")
            assert done["status"] == "resolved"
            await fails(gw, o.InvalidParams, None, "agents.resolve_escalation", escalation_id="none", decision="x")
            await fails(vz, o.InvalidParams, None, "agents.spawn", parent="U:Vz", driver="no-such-driver")
            await fails(vz, o.InvalidParams, None, "agents.assign", junior="U:Qq", task="x")
            await fails(vz, o.InvalidParams, None, "agents.terminate", alias="U:Qq")
            await fails(vz, o.InvalidParams, None, "agents.delegate", senior="U:Vz", task="x", juniors=[])
            await fails(gw, o.InvalidParams, None, "agents.escalations", status="neither")

    run(main())


def test_governance_and_knowledge_methods(shared_server) -> None:
    async def main() -> None:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw, await Gateway.connect(
            shared_server.url, token=ADMIN
        ) as admin:
            assert "decisions" in await ok(gw, "governance.query", limit=5)
            ev = await ok(gw, "governance.evaluate", volk_id="U:Ox", action="cxp.send", resource="U:Zz")
            assert ev["dry_run"] is True and ev["result"] in ("allow", "deny")
            assert (await ok(admin, "governance.rules"))["total"] > 0
            await fails(gw, o.InsufficientScope, "insufficient_scope", "governance.rules")
            await fails(gw, o.InvalidParams, None, "governance.query", limit=-1)
            await fails(gw, o.InvalidParams, None, "governance.evaluate", volk_id="U:Ox", action="")
            assert (await ok(gw, "knowledge.nodes", node_type="Volk", limit=5))["total"] >= 1
            assert "relationships" in await ok(gw, "knowledge.relationships", limit=5)
            e = await fails(gw, o.MutationNotAllowed, "mutation_not_allowed", "knowledge.query", cypher="CREATE (n) RETURN n")
            assert e.contract == "ERR-007"
            await fails(gw, o.InvalidParams, None, "knowledge.nodes", limit=-1)
            await fails(gw, o.InvalidParams, None, "knowledge.relationships", limit=-1)

    run(main())


def test_every_method_was_called() -> None:
    # Every method answered ok at least once, unless its happy path needs what `up`
    # cannot have here (a Neo4j; a delivered packet, on a gateway whose cxp.ack does
    # not deliver: test_cxp_methods checks which), and every family (the name before
    # the first dot) answered at least one typed error.
    without_happy_path = {"knowledge.query"} | ({"cxp.ack"} if "ok" not in ROUND_TRIPS.get("cxp.ack", set()) else set())
    assert sorted(ROUND_TRIPS) == sorted(PARAMS), f"never called: {sorted(set(PARAMS) - set(ROUND_TRIPS))}"
    families: dict[str, set[str]] = {}
    for method, outcomes in ROUND_TRIPS.items():
        if method not in without_happy_path:
            assert "ok" in outcomes, f"{method} never answered ok: {outcomes}"
        families.setdefault(method.split(".")[0], set()).update(outcomes - {"ok"})
    for family, errors in families.items():
        assert errors, f"no {family}.* method was seen failing with a typed error"
