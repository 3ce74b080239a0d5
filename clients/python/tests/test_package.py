"""`pip wheel` builds the package from the repo without the network, and the wheel
installs into a fresh venv whose Python imports it and talks to a real gateway."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

from conftest import HERE, OPERATOR

PACKAGE = HERE.parent


def run(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def test_the_wheel_builds_offline_and_installs_into_a_fresh_venv(shared_server, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # Offline: no index, no build isolation (the build uses the installed setuptools).
    run(sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(PACKAGE))
    built = sorted(wheels.glob("orchestrata-*.whl"))
    assert len(built) == 1, built
    # A fresh venv: the wheel and its one dependency (websockets, from the package index
    # or pip's cache) and nothing else.
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=True)
    py = str(fresh / "bin" / "python")
    run(py, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(built[0]))
    listed = run(py, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check")
    names = sorted(line.split("==")[0].lower() for line in listed.split())
    assert "orchestrata" in names and "websockets" in names, names
    script = (
        "import asyncio, orchestrata\n"
        "async def main():\n"
        f"    async with await orchestrata.Gateway.connect({shared_server.url!r}, token={OPERATOR!r}) as gw:\n"
        "        print((await gw.gateway_ping())['server_timestamp'])\n"
        "asyncio.run(main())\n"
    )
    out = run(py, "-c", script, cwd=tmp_path)
    assert out.strip().endswith("Z"), out
    where = run(py, "-c", "import orchestrata; print(orchestrata.__file__)", cwd=tmp_path)
    assert str(fresh) in where, f"imported from the venv: {where}"
