"""Requests one principal has running at once on the embedded server (auth/in_flight.py): past
`max_in_flight` still running, its next is refused with 429 and Retry-After before it takes a
worker thread, in its path's style, while another principal's requests and /healthz are served;
the slots come back as requests end. The open loopback owner is counted only when set."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.auth.in_flight import InFlight
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import ServerThread

SEARCH = {"query": "kettle"}


def _held(container: Container, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Searches wait for the event; who started each is listed."""
    release, started = threading.Event(), []
    search = container.search.search

    def waiting(*args: Any, **kwargs: Any) -> Any:
        started.append("search")
        release.wait(20)
        return search(*args, **kwargs)

    monkeypatch.setattr(container.search, "search", waiting)
    return release, started


def _wait_for(condition: Callable[[], bool]) -> bool:
    done = threading.Event()
    for _ in range(500):
        if condition():
            return True
        done.wait(0.02)
    return False


def test_a_principal_past_its_running_requests_is_refused_and_others_are_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = fake_container(tmp_path, token="t0ken", max_in_flight=2)
    notes = container.brains.create("Notes", slug="notes", visibility="tenant")
    other = container.keys.create(name="other", tenant=notes.owner_tenant, scopes=[READ, WRITE])
    release, started = _held(container, monkeypatch)
    answers: list[int] = []
    owner = {"authorization": "Bearer t0ken"}
    with (
        ServerThread(container) as st,
        httpx.Client(base_url=f"http://127.0.0.1:{st.port}", timeout=30) as http,
    ):

        def search(headers: dict[str, str]) -> None:
            answers.append(http.post("/v1/brains/notes/search", json=SEARCH, headers=headers).status_code)

        running = [threading.Thread(target=search, args=(owner,)) for _ in range(2)]
        for thread in running:
            thread.start()
        assert _wait_for(lambda: len(started) == 2)
        third = http.post("/v1/brains/notes/search", json=SEARCH, headers=owner)
        on_mcp = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**owner, "accept": "application/json, text/event-stream"},
        )
        health = http.get("/healthz")
        theirs = threading.Thread(target=search, args=({"authorization": f"Bearer {other.plaintext}"},))
        theirs.start()
        assert _wait_for(lambda: len(started) == 3)  # another principal's search runs meanwhile
        release.set()
        for thread in [*running, theirs]:
            thread.join(20)
        after = http.post("/v1/brains/notes/search", json=SEARCH, headers=owner)

    assert third.status_code == 429 and third.headers["retry-after"] == "1"
    assert third.json()["code"] == "rate_limited" and "2 requests of this caller" in third.json()["detail"]
    assert on_mcp.status_code == 429 and "2 requests of this caller" in on_mcp.json()["error"]["message"]
    assert health.status_code == 200
    assert answers == [200, 200, 200] and after.status_code == 200


def _second_while_first_runs(path: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> int:
    container = fake_container(path, **settings)
    container.brains.create("Notes", slug="notes")
    release, started = _held(container, monkeypatch)
    with ServerThread(container) as st, httpx.Client(base_url=f"http://127.0.0.1:{st.port}") as http:
        first = threading.Thread(target=lambda: http.post("/v1/brains/notes/search", json=SEARCH, timeout=30))
        first.start()
        assert _wait_for(lambda: len(started) == 1)
        try:
            return http.post("/v1/brains/notes/search", json=SEARCH, timeout=2).status_code
        except httpx.TimeoutException:
            return 0  # let in: it waits for the first's release
        finally:
            release.set()
            first.join(20)


def test_the_open_owner_is_counted_only_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _second_while_first_runs(tmp_path / "default", monkeypatch) == 0
    assert _second_while_first_runs(tmp_path / "set", monkeypatch, max_in_flight=1) == 429


def test_slots_come_back_and_no_principal_is_kept_once_its_requests_end() -> None:
    alice = Principal("t", "alice", frozenset({READ}), Via.api_key)
    bob = Principal("t", "bob", frozenset({READ}), Via.api_key)
    counter = InFlight(2)
    with (
        counter.entered(alice) as one,
        counter.entered(alice) as two,
        counter.entered(alice) as three,
        counter.entered(bob) as theirs,
    ):
        assert (one, two, three, theirs) == (True, True, False, True)
    assert len(counter) == 0
    with counter.entered(alice) as again:
        assert again
    with pytest.raises(RuntimeError), counter.entered(alice):
        raise RuntimeError("the request failed")
    assert len(counter) == 0
