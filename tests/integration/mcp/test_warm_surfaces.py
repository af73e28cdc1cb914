"""`cairn serve` builds every MCP surface in the background once it answers (mcp/warm_surfaces.py),
through each surface's lock: a call during a build waits for it and gets what it built, a failed
build is logged without its credentials and leaves the next call to build again, and the stop
ends the warm-up before its next build."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cairn.entrypoints import stopping
from cairn.entrypoints.cli.serve import _stopping_server, listen
from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp import warm_surfaces
from cairn.entrypoints.mcp.mount import mounted_surfaces
from cairn.entrypoints.mcp.registry import SURFACES
from cairn.entrypoints.mcp.warm_surfaces import SurfaceWarmUp
from cairn.entrypoints.stop_signals import StopSignals
from tests.fakes.container import fake_container
from tests.integration.mcp.test_lazy_surfaces import (
    CountedLock,
    async_tools_list,
    spy,
    tools_list,
)

EVERY_SURFACE = list(SURFACES)  # the registry's order, the canonical one first


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event]]:
    """(started, release): the build it is given to waits for `release`, set at the end whatever
    happens, so no test leaves a build waiting."""
    started, release = threading.Event(), threading.Event()
    yield started, release
    release.set()


def warm_up_of(app: FastAPI) -> SurfaceWarmUp:
    return SurfaceWarmUp(mounted_surfaces(app))


def finished(warm: SurfaceWarmUp, built: list[str], builds: int = len(EVERY_SURFACE)) -> bool:
    """Whether the warm-up made `builds` builds and then ended (stopped only once it had)."""
    deadline = time.monotonic() + 30
    while len(built) < builds and time.monotonic() < deadline:
        time.sleep(0.01)
    return warm.stop(30) and len(built) == builds


def test_the_warm_up_builds_every_surface_once_canonical_first_and_calls_then_build_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = spy(monkeypatch)
    frozen: list[str] = []  # `cairn serve` freezes what each build made, the warm-up's too
    app = create_app(fake_container(tmp_path), surface_built=lambda: frozen.append(built[-1]))
    warm = warm_up_of(app)
    with TestClient(app, base_url="http://localhost") as client:
        assert tools_list(client, "/mcp/gbrain").status_code == 200  # a call before the warm-up
        warm.start()
        warm.start()  # once only
        assert finished(warm, built)
        answers = [tools_list(client, path) for path in ("/mcp", "/mcp/zengram", "/mcp/mnemosyne/")]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert built == frozen == ["gbrain", *(s for s in EVERY_SURFACE if s != "gbrain")]


@pytest.mark.anyio
async def test_a_call_during_a_warm_up_build_waits_for_it_and_gets_the_one_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: tuple[threading.Event, threading.Event]
) -> None:
    started, release = gate

    def slow_canonical() -> None:
        if not started.is_set():  # the canonical build, the warm-up's first
            started.set()
            release.wait(10)

    built = spy(monkeypatch, before=slow_canonical)
    app = create_app(fake_container(tmp_path))
    warm = warm_up_of(app)
    (canonical, *_) = mounted_surfaces(app)
    lock = CountedLock()
    canonical._lock = lock  # type: ignore[assignment]
    warm.start()
    assert await anyio.to_thread.run_sync(started.wait, 10)
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client,
        anyio.create_task_group() as tasks,
    ):
        answers: list[httpx.Response] = []

        async def call() -> None:
            answers.append(await async_tools_list(client, "/mcp"))

        tasks.start_soon(call)
        tasks.start_soon(call)
        try:
            with anyio.fail_after(10):
                while lock.arrived < 3:  # the warm-up and both calls came to the build's lock
                    await anyio.sleep(0.01)
            health = await client.get("/healthz")  # the loop is free meanwhile
        finally:
            release.set()
    assert health.status_code == 200
    assert [a.status_code for a in answers] == [200, 200]
    assert all(a.json()["result"]["tools"] for a in answers)
    assert await anyio.to_thread.run_sync(finished, warm, built)
    assert built == EVERY_SURFACE  # the canonical surface built once, by the warm-up


def test_a_failed_warm_up_build_is_logged_without_its_secrets_and_the_next_call_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = "cairn_" + "k" * 32
    failures = [RuntimeError(f"cannot open /srv/cairn/surfaces.db with password=hunter2hunter2 and {key}")]

    def fail_once() -> None:
        if failures:
            raise failures.pop()

    built = spy(monkeypatch, before=fail_once)
    app = create_app(fake_container(tmp_path))
    warm = warm_up_of(app)
    warm.start()
    assert finished(warm, built)
    assert built == EVERY_SURFACE  # the others built all the same
    with TestClient(app, base_url="http://localhost") as client:
        health = client.get("/healthz")
        again = tools_list(client, "/mcp")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert again.status_code == 200 and again.json()["result"]["tools"]
    assert built == [*EVERY_SURFACE, "canonical"]  # the failure kept nothing
    (said,) = [r for r in caplog.records if r.name == warm_surfaces.__name__]
    assert said.levelname == "WARNING" and said.exc_info is None
    message = said.getMessage()
    assert "the canonical MCP surface in the background failed (RuntimeError: cannot open" in message
    assert "hunter2" not in message and key not in message


def test_a_stop_during_a_warm_up_build_returns_within_its_budget_and_builds_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: tuple[threading.Event, threading.Event]
) -> None:
    started, release = gate
    built = spy(monkeypatch, before=lambda: (started.set(), release.wait(10)))
    warm = warm_up_of(create_app(fake_container(tmp_path)))
    warm.start()
    assert started.wait(10)
    asked = time.monotonic()
    assert warm.stop(0.0) is False  # asked only: the build under way cannot be cut short
    assert warm.stop(0.3) is False  # the wait ends with its budget
    assert time.monotonic() - asked < 2
    release.set()
    assert warm.stop(10)
    assert built == ["canonical"]  # nothing built after the stop


def test_the_warm_up_builds_nothing_once_the_server_stops_or_when_stopped_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = spy(monkeypatch)
    early = warm_up_of(create_app(fake_container(tmp_path / "a")))
    assert early.stop(0.0)
    early.start()
    signalled = stopping.Stopping()
    signalled.set()  # the exit signal came before the server's first answer
    monkeypatch.setattr(warm_surfaces, "STOPPING", signalled)
    late = warm_up_of(create_app(fake_container(tmp_path / "b")))
    late.start()
    assert late.stop(10) and early.stop(10)
    assert built == []


def test_cairn_serves_server_starts_the_warm_up_once_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cairn serve`'s uvicorn server says when it serves: only then may the surfaces be built."""
    built = spy(monkeypatch)
    app = create_app(fake_container(tmp_path))
    warm = warm_up_of(app)
    seen: list[bool] = []
    sock = listen("127.0.0.1", 0)
    assert sock is not None
    port = sock.getsockname()[1]

    def serving() -> None:
        seen.append(server.started)
        warm.start()

    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = _stopping_server()(config, StopSignals("test"), serving)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
        while not all(s.built for s in mounted_surfaces(app)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert warm.stop(30)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
    assert seen == [True]
    assert built == EVERY_SURFACE
