"""scripts/aws_local.py as a process: what the README's install gives it, what it says when a
dependency is missing, and that SIGTERM stops it cleanly."""

from __future__ import annotations

import ast
import re
import socket
import subprocess
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

from tests.integration.aws.aws_local_run import ROOT, SCRIPT, aws_local, stop

INSTALL = ".venv/bin/pip install -e '.[aws-local]'"


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", requirement).lower()


def extra_distributions(extra: str) -> set[str]:
    """What `pip install -e '.[extra]'` installs: the extra of pyproject.toml (read here, not from
    the installed metadata, which is as old as the last install) and everything it pulls in."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]

    def own(name: str) -> list[Requirement]:
        return [Requirement(r) for r in (project["dependencies"] if name == "" else optional[name])]

    pending, found = [*own(""), *own(extra)], set()
    while pending:
        requirement = pending.pop()
        name = _name(requirement.name)
        if name == "cairn":
            pending += [r for wanted in requirement.extras for r in own(wanted)]
            continue
        if name in found:
            continue
        found.add(name)
        for wanted in requirement.extras or {""}:
            for text in metadata.requires(requirement.name) or ():
                needed = Requirement(text)
                if needed.marker is None or needed.marker.evaluate({"extra": wanted}):
                    pending.append(needed)
    return found


def script_imports() -> set[str]:
    """Top-level names of what scripts/aws_local*.py import from outside the standard library."""
    names: set[str] = set()
    for script in SCRIPT.parent.glob("aws_local*.py"):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    ours = {"aws_local_cognito", "aws_local_iam", "aws_local_template", "cairn", "__future__"}
    return {name for name in names if name not in sys.stdlib_module_names} - ours


def test_the_readme_installs_what_the_emulation_imports() -> None:
    readme = (ROOT / "README.md").read_text()
    assert f"{INSTALL} && .venv/bin/python scripts/aws_local.py" in readme
    installed = extra_distributions("aws-local")
    providers = metadata.packages_distributions()
    imports = script_imports()
    assert {"boto3", "moto", "cfnlint", "mangum", "aws_lambda_powertools", "uvicorn", "werkzeug"} <= imports
    missing = {m for m in imports if not any(_name(d) in installed for d in providers.get(m, ()))}
    assert missing == set()


def test_a_missing_dependency_is_named_with_the_install_command(tmp_path: Path) -> None:
    """What a base install (`pip install -e .`) gives the script: a message, not a traceback."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "boto3.py").write_text("raise ModuleNotFoundError(\"No module named 'boto3'\", name='boto3')\n")
    env = {"PYTHONPATH": str(shadow), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "needs the Python package 'boto3'" in done.stderr and INSTALL in done.stderr


def _free(port: int) -> bool:
    """Whether a restart could listen there: as aws_local's own sockets, with SO_REUSEADDR, which
    the closed connections moto's server ended itself (TIME_WAIT for a minute) do not block."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_sigterm_stops_it_with_exit_0_and_releases_its_ports(tmp_path: Path) -> None:
    with aws_local(tmp_path) as running:
        moto_port = int(running.moto.rsplit(":", 1)[1])
        # Busy first: a request in flight, a JWKS connection, the job worker started.
        assert httpx.post(f"{running.base}/v1/brains", json={"name": "Busy"}, timeout=30).status_code == 201
        started = time.monotonic()
        code = stop(running.proc, timeout=30)
        took = time.monotonic() - started
        assert code == 0, running.log()
        assert took < 15, f"it took {took:.1f} s to stop"
        assert _free(running.port) and _free(moto_port)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{running.base}/healthz", timeout=2)
