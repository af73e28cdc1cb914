"""`cairn serve` stops within the 30 s a process manager allows after SIGTERM, whatever runs, and
closes the stores it opened when nothing runs in them any more; the next start finds the data
sound and finishes what the stop left. The stop with calls running past its budget runs through
WRAPPED (tests/support/stopping.py) with the budget scaled down to BUDGET_S, the calls in flight
given their shipped share of it: the same stop, bounded the same way, in seconds."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import httpx
import pytest

from cairn.entrypoints.cli.check import settle
from cairn.entrypoints.cli.clean_stop import STOP_WITHIN_S
from tests.support.index_check import index_problems
from tests.support.processes import put, start
from tests.support.soundness import opened
from tests.support.stopping import left_open, wrapped

pytestmark = pytest.mark.integration
MANAGER_S = 30.0  # systemd's TimeoutStopSec and uvicorn's default: SIGKILL after it
BUDGET_S = 5.0  # the stop's budget in place of STOP_WITHIN_S


def rota(n: int, sections: int) -> str:
    """A document whose write embeds for tens of seconds here."""
    return "\n\n".join(
        f"## Berth {i}\n\nThe crane rota {n}-{i} names who lifts cargo on day {i % 7}."
        for i in range(sections)
    )


def test_a_stop_with_calls_running_past_the_budget_ends_in_time_and_the_next_start_is_sound(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    server = start(data, command=wrapped(str(BUDGET_S), "", "in-scale"))
    try:
        assert (
            httpx.post(f"{server.base}/v1/brains", json={"name": "Shore", "slug": "shore"}).status_code == 201
        )
        assert put(server.base, "shore", "kept.md", "# Kept\n\nThe godwit feeds on the mudflat.").is_success

        def write(n: int) -> None:  # two long writes: together they embed for about a minute
            with contextlib.suppress(httpx.HTTPError):  # cut off by the stop
                put(server.base, "shore", f"rota{n}.md", rota(n, 20_000), timeout_s=300)

        writers = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(2)]
        for writer in writers:
            writer.start()
        time.sleep(2.0)
        signalled = time.monotonic()
        server.process.terminate()
        server.process.wait(timeout=120)
        took = time.monotonic() - signalled
    finally:
        server.kill() if server.alive() else None
    assert STOP_WITHIN_S + 2.0 < MANAGER_S  # the shipped budget, with room for the exit
    assert took < BUDGET_S + 2.0, took
    assert server.process.returncode == 0

    restarted = opened(data)
    settle(restarted)  # as a start does: what the writes cut short had committed is indexed
    brain = restarted.brains.get("shore")
    assert restarted.documents.read(brain, "kept.md").decode().startswith("# Kept")
    assert index_problems(restarted) == []
    assert restarted.repair.compare(brain, deep=True).sound


def test_a_stop_closes_the_stores_it_opened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start(data)
    try:
        assert (
            httpx.post(f"{server.base}/v1/brains", json={"name": "Shore", "slug": "shore"}).status_code == 201
        )
        for n in range(3):
            assert put(server.base, "shore", f"n{n}.md", f"# Note {n}\n\nThe godwit {n} feeds.").is_success
        assert (data / "chunks.sqlite3-wal").exists()  # open, and written
        server.process.terminate()
        server.process.wait(timeout=MANAGER_S)
    finally:
        server.kill() if server.alive() else None
    assert server.process.returncode == 0
    assert left_open(data) == []  # every store closed
