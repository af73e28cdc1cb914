"""entrypoints/counted_calls.py: a request cut short by a native cancel (uvicorn's, at its graceful
shutdown's end) leaves its sync route running, counted until it ends; the route's work settles what
its route does once answered (the audit entry) only when it succeeded, and both the cancel and the
late end are one warning naming the route."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, cast

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI

from cairn.auth import access
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.domain.errors import NotFound
from cairn.domain.models import Brain
from cairn.entrypoints.counted_calls import CountedCalls, CountedRoute, settle_with
from cairn.entrypoints.rest.authz import ScopedRoute, route_audit
from cairn.off_loop import CallsInFlight

ROUTE = "POST /notes/{name}"


class World:
    """An app whose one route is sync and held until released, failing when told to."""

    def __init__(self, failure: Exception | None = None, *, counted: bool = True) -> None:
        self.calls = CallsInFlight()
        self.started, self.release = threading.Event(), threading.Event()
        self.settled: list[str] = []
        router = APIRouter(route_class=CountedRoute)

        async def audited() -> None:
            settle_with(lambda: self.settled.append("audited"))

        @router.post("/notes/{name}", dependencies=[Depends(audited)])
        def write(name: str) -> dict[str, str]:
            self.started.set()
            self.release.wait(10)
            if failure is not None:
                raise failure
            return {"wrote": name}

        self.app = FastAPI()
        self.app.include_router(router)
        if counted:  # else as on Lambda and in tests: no CountedCalls
            self.app.add_middleware(CountedCalls, calls=self.calls)

    async def cut(self) -> None:
        """The request sent, then its task cancelled natively once the route runs."""
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://cairn.test") as client:
            sent = asyncio.ensure_future(client.post("/notes/godwit"))
            while not self.started.is_set():
                await asyncio.sleep(0.01)
            sent.cancel()
            with pytest.raises(asyncio.CancelledError):
                await sent


def test_a_sync_route_cut_short_is_counted_until_it_ends_and_settled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    with caplog.at_level(logging.WARNING, logger="cairn.calls"):
        asyncio.run(world.cut())
        assert not world.calls.wait(0.2)  # still running, counted, after its caller went
        assert world.settled == []
        world.release.set()
        assert world.calls.wait(5)
    assert world.settled == ["audited"]  # once, by the route's thread
    said = [r.getMessage() for r in caplog.records]
    assert said[0].startswith(f"{ROUTE} was cut short by the stop")
    assert said[1] == f"{ROUTE} ended after the stop cut its call short"
    assert len(said) == 2


def test_a_sync_route_cut_short_that_fails_is_said_and_not_settled(caplog: pytest.LogCaptureFixture) -> None:
    world = World(failure=NotFound("no such note"))
    with caplog.at_level(logging.WARNING, logger="cairn.calls"):
        asyncio.run(world.cut())
        world.release.set()
        assert world.calls.wait(5)
    assert world.settled == []
    assert caplog.records[-1].getMessage() == f"{ROUTE} failed after the stop cut its call short: not_found"


def test_a_request_not_cut_short_is_answered_and_settled_by_its_route_alone() -> None:
    world = World()
    world.release.set()

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=world.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://cairn.test") as client:
            return await client.post("/notes/godwit")

    response = asyncio.run(send())
    assert response.status_code == 200 and response.json() == {"wrote": "godwit"}
    assert world.settled == ["audited"]  # once, by the route's work as it returned
    assert world.calls.wait(0)


async def answered_then_cut(app: Any, method: str, path: str) -> list[dict[str, Any]]:
    """The request run to its answer, whose sending the stop's cancel (or a client gone) then cuts:
    the route's work returned and its answer is going out. Returns what was sent before."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        raise asyncio.CancelledError  # the answer's head going out

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"path=notes/a.md",
        "root_path": "",
        "headers": [(b"host", b"cairn.test")],
        "client": ("127.0.0.1", 1),
        "server": ("cairn.test", 80),
    }
    with pytest.raises(asyncio.CancelledError):
        await app(scope, receive, send)
    return sent


@pytest.mark.parametrize("counted", [True, False], ids=["counted", "uncounted"])
def test_a_route_that_returned_is_settled_though_its_answer_is_cut(counted: bool) -> None:
    """A cancel landing after the route's work returned, as its answer goes out, came after the
    settle: the write it acknowledges has its audit entry (before, the entry was written after the
    answer was sent, and such a cancel skipped it)."""
    world = World(counted=counted)
    world.release.set()
    sent = asyncio.run(answered_then_cut(world.app, "POST", "/notes/godwit"))
    assert sent and sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert world.settled == ["audited"]


class _Audit:
    def __init__(self) -> None:
        self.entries: list[tuple[str, str | None]] = []

    def record(self, principal: Principal | None, action: str, **fields: Any) -> None:
        self.entries.append((action, fields.get("target")))


class _NoBrains:
    def get(self, ref: str) -> Brain:
        raise NotFound(f"no brain {ref}")


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_a_rest_write_answered_then_cut_keeps_its_audit_entry(sync: bool) -> None:
    """rest/authz.py's audit of a /v1 write, with its answer cut as it goes out: one entry, as for a
    write answered whole (sync routes in their worker thread, async ones on the loop)."""
    audit = _Audit()
    router = APIRouter(
        route_class=ScopedRoute,
        dependencies=[Depends(route_audit(cast(Any, _NoBrains()), cast(Any, audit)))],
    )
    wrote: list[str] = []

    if sync:

        @router.put("/v1/brains/{brainId}/documents", name="put_document")
        def put(brainId: str, path: str) -> dict[str, str]:
            wrote.append(path)
            return {"path": path}

    else:

        @router.put("/v1/brains/{brainId}/documents", name="put_document")
        async def put_async(brainId: str, path: str) -> dict[str, str]:
            wrote.append(path)
            return {"path": path}

    app = FastAPI()
    app.include_router(router)
    writer = Principal("t1", "ada", frozenset({WRITE, READ}), Via.static_token)

    async def cut() -> None:
        with access.acting_as(writer):
            await answered_then_cut(app, "PUT", "/v1/brains/notes/documents")

    asyncio.run(cut())
    assert wrote == ["notes/a.md"]
    assert audit.entries == [("rest.put_document", "notes/a.md")]
