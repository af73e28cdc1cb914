"""scripts/aws_local.py started as its users start it (a process of its own, on a free port of
127.0.0.1 that it names in its banner) and stopped by whoever started it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "aws_local.py"
# The emulation's local credentials (its defaults): the SigV4 caller and the machine client.
ACCESS_KEY, SECRET_KEY, REGION = "AKIACAIRNLOCAL000000", "cairn-local-secret", "us-east-1"
MACHINE_ID, MACHINE_SECRET = "localmachineclient", "cairn-local-machine-secret"


@dataclass
class AwsLocal:
    proc: subprocess.Popen[str]
    base: str
    moto: str
    data: Path
    output: list[str] = field(default_factory=list)
    """Everything it printed, for a failing test's message."""

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def log(self) -> str:
        return "".join(self.output[-40:])


def moto_credentials() -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@contextmanager
def aws_local(data: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[AwsLocal]:
    """The emulation on free ports, up (healthz answers) within 60 s; stopped with SIGTERM after."""
    cmd = [sys.executable, str(SCRIPT), "--port", "0", "--data-dir", str(data), *args]
    environment = {**os.environ, **moto_credentials(), **(env or {})}
    proc = subprocess.Popen(cmd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and not line.startswith("moto on"):
            output.append(line)
            line = proc.stdout.readline()
        output.append(line)
        found = re.match(r"moto on (\S+); API function on (\S+)", line)
        assert found, f"aws_local exited before its banner:\n{''.join(output)}"
        threading.Thread(target=lambda: output.extend(proc.stdout or ()), daemon=True).start()
        running = AwsLocal(proc, found.group(2), found.group(1), data, output)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"aws_local exited:\n{running.log()}"
            try:
                if httpx.get(f"{running.base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError(f"aws_local did not come up:\n{running.log()}")
        yield running
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str], timeout: float = 20) -> int:
    """SIGTERM, then SIGKILL if it has not exited within `timeout`; its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    return proc.returncode


def run_smoke(
    base: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`cairn smoke BASE ARGS...` as a user runs it, with only the credentials `env` gives it."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_SMOKE_", "AWS_"))}
    cmd = [sys.executable, "-m", "cairn.entrypoints.cli", "smoke", base, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**clean, **(env or {})})


STEP = re.compile(r"^  (ok|skipped|FAILED)\s+(.+?)(?:\s+\d+\.\d s)?  +(.*)$")


def smoke_steps(output: str) -> dict[str, tuple[str, str]]:
    """Each step's status and what its line says after the name, by step name."""
    return {m.group(2): (m.group(1), m.group(3)) for m in map(STEP.match, output.splitlines()) if m}
