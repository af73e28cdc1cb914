"""An MCP surface is built, and the MCP SDK imported, on its first call (entrypoints/mcp/mount.py),
behind API Gateway and in `cairn serve` alike: the API function's cold import leaves the SDK out, a
REST or health request never loads it, concurrent first calls build once, and a failed build is a
503 the next call recovers from. The tools a caller without a credential may call are declared in the
registry, so authentication knows them before anything is built; each surface's server agrees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from fastapi.testclient import TestClient

from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp import http as mcp_http
from cairn.entrypoints.mcp.mount import LazyEndpoint
from cairn.entrypoints.mcp.registry import SURFACES, http_paths, public_tools
from cairn.off_loop import CallsInFlight
from tests.fakes.container import fake_container

ROOT = Path(__file__).resolve().parents[3]
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


def spy(monkeypatch: pytest.MonkeyPatch, before: Callable[[], object] = lambda: None) -> list[str]:
    """The surfaces built, in order; `before` runs at the start of each build (it may raise)."""
    built: list[str] = []
    real = mcp_http.surface_endpoints

    def counted(surface: str, container: Any, calls: Any = None) -> Any:
        built.append(surface)
        before()
        return real(surface, container, calls)

    monkeypatch.setattr(mcp_http, "surface_endpoints", counted)
    return built


TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})


def tools_list(client: TestClient, path: str) -> Any:
    return client.post(path, content=TOOLS_LIST, headers=MCP_HEADERS)


async def async_tools_list(client: httpx.AsyncClient, path: str) -> httpx.Response:
    return await client.post(path, content=TOOLS_LIST, headers=MCP_HEADERS)


def test_behind_the_gateway_a_surface_is_built_on_its_first_call_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = spy(monkeypatch)
    container = fake_container(tmp_path, backend="aws", allow_open=True)

    with TestClient(create_app(container), base_url="http://localhost") as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/brains").status_code == 200
        assert built == []  # no surface for REST and health
        first = tools_list(client, "/mcp")
        again = tools_list(client, "/mcp")
        zengram = tools_list(client, "/mcp/zengram")

    assert first.status_code == again.status_code == zengram.status_code == 200
    assert {t["name"] for t in first.json()["result"]["tools"]} >= {"memory_search", "memory_remember"}
    assert built == ["canonical", "zengram"]  # each once, when first called


def test_the_embedded_server_builds_a_surface_on_its_first_call_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = spy(monkeypatch)
    frozen: list[str] = []  # `cairn serve` freezes what each build made (warm_start.freeze_built)
    app = create_app(fake_container(tmp_path), surface_built=lambda: frozen.append(built[-1]))
    with TestClient(app, base_url="http://localhost") as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/brains").status_code == 200
        assert built == []  # `cairn serve` starts without building any
        listed = [tools_list(client, path) for path in ("/mcp/gbrain", "/mcp/gbrain", "/mcp/mnemosyne/")]
        assert tools_list(client, "/mcp/mnemosyne").status_code == 200  # the same surface's other path
    assert [answer.status_code for answer in listed] == [200, 200, 200]
    assert built == frozen == ["gbrain", "mnemosyne"]


@pytest.mark.anyio
async def test_concurrent_first_calls_build_the_surface_once_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build runs in a worker thread under a lock: calls that arrive while it runs wait for it
    and use what it built, and /healthz answers meanwhile."""
    started, release = threading.Event(), threading.Event()
    built = spy(monkeypatch, before=lambda: (started.set(), release.wait(10)))
    app = create_app(fake_container(tmp_path))
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client,
        anyio.create_task_group() as tasks,
    ):
        answers: list[httpx.Response] = []

        async def call() -> None:
            answers.append(await async_tools_list(client, "/mcp/thoughtmcp"))

        for _ in range(4):
            tasks.start_soon(call)
        try:
            assert await anyio.to_thread.run_sync(started.wait, 10)
            health = await client.get("/healthz")  # the loop is free while the build waits
        finally:
            release.set()
        assert health.status_code == 200
    assert [a.status_code for a in answers] == [200] * 4
    assert all(a.json()["result"]["tools"] for a in answers)
    assert built == ["thoughtmcp"]


@pytest.mark.anyio
async def test_a_stop_that_cuts_a_first_call_short_leaves_its_build_counted_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cairn serve`'s stop cancels a call still running past its graceful budget: a first call
    waiting for its surface's build ends at the cancel, as every call's work off the loop does, and
    the build is counted in the calls the stop waits for within its budget (it waited for the whole
    build, shielded from the cancel, past the stop's 25 s)."""
    started, release, cancelled_first = threading.Event(), threading.Event(), threading.Event()
    spy(monkeypatch, before=lambda: (started.set(), release.wait(10)))
    timer = threading.Timer(5, release.set)  # without the fix the cancel waits for this
    calls = CallsInFlight()
    app = create_app(fake_container(tmp_path), calls)
    timer.start()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost"
        ) as client:
            async with anyio.create_task_group() as tasks:

                async def call() -> None:
                    await async_tools_list(client, "/mcp/gbrain")

                tasks.start_soon(call)
                assert await anyio.to_thread.run_sync(started.wait, 10)
                tasks.cancel_scope.cancel()  # as uvicorn cancels the calls left at the stop
            if not release.is_set():
                cancelled_first.set()
        assert cancelled_first.is_set(), "the cancel waited for the build"
        assert not calls.wait(0.05)  # the build still runs, counted for the stop
    finally:
        release.set()
        timer.cancel()
    assert calls.wait(10)


def test_a_surface_that_fails_to_build_answers_503_and_is_built_again_on_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    internal = "/srv/cairn/private/surfaces.db"  # the failure's text: logged, never answered
    failures = [RuntimeError(f"cannot open {internal}")]

    def fail_once() -> None:
        if failures:
            raise failures.pop()

    built = spy(monkeypatch, before=fail_once)
    frozen: list[str] = []
    app = create_app(fake_container(tmp_path), surface_built=lambda: frozen.append(built[-1]))
    with TestClient(app, base_url="http://localhost") as client:
        refused = tools_list(client, "/mcp/zengram")
        health = client.get("/healthz")
        again = tools_list(client, "/mcp/zengram")
        other = tools_list(client, "/mcp/admin")

    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    error = refused.json()["error"]
    assert refused.json()["jsonrpc"] == "2.0" and error["code"] == -32000
    assert error["message"] == "the zengram MCP surface could not be started; try again shortly"
    assert internal not in refused.text
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert again.status_code == other.status_code == 200
    assert {t["name"] for t in again.json()["result"]["tools"]}
    assert built == ["zengram", "zengram", "admin"]  # the failed build kept nothing
    assert frozen == ["zengram", "admin"]  # nothing frozen after the failure
    assert "the zengram MCP surface could not be built" in caplog.text


class CountedLock:
    """A surface's build lock that counts the calls that came to it."""

    def __init__(self) -> None:
        self.lock, self.arrived = threading.Lock(), 0

    def __enter__(self) -> None:
        self.arrived += 1
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


@pytest.mark.anyio
async def test_calls_that_waited_for_a_build_that_failed_share_its_503_and_the_next_call_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that fails fails for the calls that queued behind it too: each of them built again
    in turn (a second each), holding a worker thread meanwhile, so a broken surface under load took
    the server's threads for as many seconds as calls came."""
    started, release = threading.Event(), threading.Event()
    failing = [True]

    def fail_after_release() -> None:
        started.set()
        release.wait(10)
        if failing[0]:
            raise RuntimeError("the surface is broken")

    built = spy(monkeypatch, before=fail_after_release)
    app = create_app(fake_container(tmp_path))
    lock = CountedLock()
    (endpoints,) = {
        endpoint.endpoints
        for r in app.router.routes
        if isinstance(endpoint := getattr(r, "endpoint", None), LazyEndpoint)
        and endpoint.path == "/mcp/zengram"
    }
    endpoints._lock = lock  # type: ignore[assignment]
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client,
        anyio.create_task_group() as tasks,
    ):
        answers: list[httpx.Response] = []

        async def call() -> None:
            answers.append(await async_tools_list(client, "/mcp/zengram"))

        for _ in range(4):
            tasks.start_soon(call)
        try:
            assert await anyio.to_thread.run_sync(started.wait, 10)
            with anyio.fail_after(10):
                while lock.arrived < 4:  # the other three wait for the build
                    await anyio.sleep(0.01)
        finally:
            release.set()
    assert [a.status_code for a in answers] == [503] * 4
    assert built == ["zengram"]  # one build, its failure the answer of every call that waited for it
    failing[0] = False
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as client:
        again = await async_tools_list(client, "/mcp/zengram")
    assert again.status_code == 200 and built == ["zengram", "zengram"]


def test_the_registrys_public_tools_are_each_surfaces_own(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    for surface in SURFACES:
        endpoints = mcp_http.surface_endpoints(surface, container)  # refuses a mismatch
        assert set(endpoints) == set(http_paths(surface))
    assert public_tools() == {"/mcp/mnemosyne": {"get_health"}, "/mcp/mnemosyne/": {"get_health"}}


def test_the_api_functions_cold_import_leaves_the_mcp_sdk_out() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "AWS_"))}
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from lambda_cold_import import LAMBDA_ENV
    finally:
        sys.path.remove(str(ROOT / "bench"))
    env.update(LAMBDA_ENV)
    code = (
        "import sys, functions.api.app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_client_taking_only_json_gets_the_result_of_a_call_that_asks_for_progress(tmp_path: Path) -> None:
    """Progress goes over SSE; a client whose Accept names JSON alone was answered 406 for the
    call with a progress token it got a result for without one."""
    container = fake_container(tmp_path)
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "memory_create_brain",
            "arguments": {"name": "Tea"},
            "_meta": {"progressToken": 1},
        },
    }
    with TestClient(create_app(container), base_url="http://localhost") as client:
        json_only = {**MCP_HEADERS, "accept": "application/json"}
        answered = client.post("/mcp", content=json.dumps(call), headers=json_only)
        streamed = client.post("/mcp", content=json.dumps({**call, "id": 4}), headers=MCP_HEADERS)
    assert answered.status_code == 200 and answered.headers["content-type"].startswith("application/json")
    assert answered.json()["result"]["structuredContent"]["name"] == "Tea"
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
