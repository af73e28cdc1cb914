"""entrypoints/counted_calls.py: a request cut short by a native cancel (uvicorn's, at its graceful
shutdown's end) leaves its sync route running, counted until it ends; the route's work settles what
its route does once answered (the audit entry) only when it succeeded, and both the cancel and the
late end are one warning naming the route."""

from __future__ import annotations

import asyncio
import logging
import threading

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI

from cairn.domain.errors import NotFound
from cairn.entrypoints.counted_calls import CountedCalls, CountedRoute, settle_with
from cairn.off_loop import CallsInFlight

ROUTE = "POST /notes/{name}"


class World:
    """An app whose one route is sync and held until released, failing when told to."""

    def __init__(self, failure: Exception | None = None) -> None:
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
    assert world.settled == []  # the settle is only for a cut: the route's own audit records it
    assert world.calls.wait(0)
