"""The client's methods are the gateway's contract: a method added to or changed in
schemas/json/gateway/ without regenerating the client fails here (issue 62)."""

from __future__ import annotations

import asyncio
import inspect
import json
import keyword
import sys

from conftest import HERE, REPO, OPERATOR

import orchestrata
from orchestrata import Gateway
from orchestrata._methods import KEYED, PARAMS
from orchestrata.client import READS

sys.path.insert(0, str(HERE.parent / "scripts"))
import generate  # noqa: E402

SCHEMAS = REPO / "schemas" / "json" / "gateway"


def test_the_generated_methods_are_those_of_the_schemas() -> None:
    # A stale _methods.py (a schema changed, the generator was not run) fails the build.
    for path, text in generate.render().items():
        assert path.read_text() == text, f"{path.name} is stale: run clients/python/scripts/generate.py"


def test_every_schema_method_has_a_coroutine_with_the_schemas_params() -> None:
    methods = sorted(p.name[: -len(".schema.json")] for p in (SCHEMAS / "params").glob("*.schema.json"))
    assert methods, "the schemas are found"
    assert sorted(PARAMS) == methods
    for method in methods:
        schema = json.loads((SCHEMAS / "params" / f"{method}.schema.json").read_text())
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fn = getattr(Gateway, method.replace(".", "_"), None)
        assert fn is not None and inspect.iscoroutinefunction(fn), f"no coroutine for {method}"
        sig = inspect.signature(fn)
        names = {p + "_" if keyword.iskeyword(p) else p for p in props}
        got = {n for n in sig.parameters if n != "self"}
        assert got == names, f"{method}: params {got} differ from the schema's {names}"
        for prop in props:
            name = prop + "_" if keyword.iskeyword(prop) else prop
            has_default = sig.parameters[name].default is not inspect.Parameter.empty
            assert has_default == (prop not in required), f"{method}.{prop}: required is {prop in required}"
        assert ("idempotency_key" in props) == (method in KEYED), method


def test_every_contract_error_has_a_class() -> None:
    ids = {getattr(c, "contract", None) for c in vars(orchestrata.errors).values() if isinstance(c, type)}
    assert {f"ERR-{n:03}" for n in range(1, 19)} <= ids
    for code in (-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003):
        assert orchestrata.errors.BY_CODE[code].code == code
    e = orchestrata.errors.from_error({"code": -32602, "message": "Invalid params", "data": {"reason": "unknown_target_volk"}})
    assert isinstance(e, orchestrata.UnknownTargetVolk) and isinstance(e, orchestrata.InvalidParams)
    assert e.reason == "unknown_target_volk" and e.contract == "ERR-006"
    # A reason under another code than ours keeps the code's class.
    e = orchestrata.errors.from_error({"code": -32603, "message": "x", "data": {"reason": "unknown_target_volk"}})
    assert type(e) is orchestrata.InternalError


def test_the_running_gateway_serves_exactly_these_methods(shared_server) -> None:
    async def main() -> list[dict]:
        async with await Gateway.connect(shared_server.url, token=OPERATOR) as gw:
            info = await gw.gateway_info()
            return info["methods"]  # type: ignore[typeddict-item]

    rows = asyncio.run(main())
    served = {r["method"] if "method" in r else r["name"]: r for r in rows}
    assert sorted(served) == sorted(PARAMS)
    for method, row in served.items():
        if not row.get("mutates", True):
            assert method in READS or method == "auth.authenticate", f"{method} is a read: retry-safe"
        elif method in READS:
            raise AssertionError(f"{method} mutates but the client would retry it without a key")
