"""GET /v1/brains/{brainId}/events over a real socket: ready, change frames, pings, cleanup."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from cairn.auth import access
from cairn.auth.api_keys import ApiKeyService
from cairn.bootstrap import Container
from cairn.entrypoints.http import create_app
from cairn.entrypoints.rest import events
from cairn.services.still_allowed import RECHECK_S
from tests.fakes.container import fake_container
from tests.integration.rest.live import Frame, SseReader, serve

OCTET = {"Content-Type": "application/octet-stream"}
TIMEOUT = httpx.Timeout(10.0)


def _container(tmp_path: Path, ping_s: float) -> Container:
    container = fake_container(tmp_path, events_ping_s=ping_s)
    container.brains.create("Notes", slug="notes")
    return container


@contextmanager
def events_stream(container: Container) -> Iterator[tuple[httpx.Client, SseReader]]:
    """A live server, a client for mutations, and the brain's event stream read through it."""
    with (
        serve(create_app(container)) as base,
        httpx.Client(base_url=base, timeout=TIMEOUT) as http,
        http.stream("GET", "/v1/brains/notes/events", headers={"Accept": "text/event-stream"}) as stream,
    ):
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-cache"
        yield http, SseReader(stream.iter_lines())


def _subscribers(container: Container, brain_slug: str) -> int:
    brain = container.brains.get(brain_slug)
    return len(container.events._subs.get(brain.id, []))


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_change_frames_for_every_mutation_in_order(tmp_path: Path) -> None:
    container = _container(tmp_path, ping_s=300)
    with events_stream(container) as (http, sse):
        ready = sse.next()
        assert (ready.event, ready.data) == ("ready", "ok")

        # When every kind of mutation is committed
        docs = "/v1/brains/notes/documents"
        http.put(docs, params={"path": "memory/a.md"}, content=b"1", headers=OCTET).raise_for_status()
        http.put(docs, params={"path": "memory/a.md"}, content=b"2", headers=OCTET).raise_for_status()
        http.post(
            f"{docs}/append", params={"path": "memory/a.md"}, content=b"3", headers=OCTET
        ).raise_for_status()
        http.post(f"{docs}/rename", json={"from": "memory/a.md", "to": "memory/b.md"}).raise_for_status()
        http.delete(docs, params={"path": "memory/b.md"}).raise_for_status()
        ops = [
            {"type": "write", "path": "x.md", "content_base64": base64.b64encode(b"x").decode()},
            {"type": "rename", "path": "x.md", "to": "y.md"},
            {"type": "delete", "path": "y.md"},
        ]
        http.post(f"{docs}/batch-ops", json={"reason": "sync", "ops": ops}).raise_for_status()

        frames = [sse.next() for _ in range(8)]

    # Then one change frame per op, in commit order, with increasing ids
    assert all(f.event == "change" for f in frames)
    changes = [json.loads(f.data) for f in frames]
    assert [(c["kind"], c["path"]) for c in changes] == [
        ("created", "memory/a.md"),
        ("updated", "memory/a.md"),
        ("updated", "memory/a.md"),
        ("renamed", "memory/b.md"),
        ("deleted", "memory/b.md"),
        ("created", "x.md"),
        ("renamed", "y.md"),
        ("deleted", "y.md"),
    ]
    assert changes[3]["old_path"] == "memory/a.md"
    assert changes[6]["old_path"] == "x.md"
    assert [c.get("reason") for c in changes[5:]] == ["sync"] * 3
    assert all(c["when"].endswith("Z") for c in changes)
    ids = [ready.id] + [f.id for f in frames]
    assert ids == sorted(set(ids))


def test_pings_keep_the_stream_alive_and_disconnect_unsubscribes(tmp_path: Path) -> None:
    container = _container(tmp_path, ping_s=0.05)
    with serve(create_app(container)) as base, httpx.Client(base_url=base, timeout=TIMEOUT) as http:
        with http.stream("GET", "/v1/brains/notes/events") as stream:
            sse = SseReader(stream.iter_lines())
            frames: list[Frame] = [sse.next() for _ in range(4)]
            assert _subscribers(container, "notes") == 1
        # When the client goes away, the server drops its subscription
        assert _wait_for(lambda: _subscribers(container, "notes") == 0)

    assert frames[0].event == "ready"
    assert [(f.event, f.data) for f in frames[1:]] == [("ping", "keepalive")] * 3
    assert [f.id for f in frames] == sorted({f.id for f in frames})


def test_streams_are_per_brain(tmp_path: Path) -> None:
    container = _container(tmp_path, ping_s=300)
    container.brains.create("Other", slug="other")
    with events_stream(container) as (http, sse):
        assert sse.next().event == "ready"
        for slug in ("other", "notes"):
            url = f"/v1/brains/{slug}/documents"
            http.put(url, params={"path": f"{slug}.md"}, content=b"x", headers=OCTET).raise_for_status()
        change = sse.next()
    assert json.loads(change.data)["path"] == "notes.md"


def _keyed_stream(
    tmp_path: Path, change: Callable[[Container, str], object], *, limited: bool = True, writes: int = 3
) -> tuple[list[Frame], bool]:
    """A key that may read `notes` opens its stream; `change(container, key_id)` takes that right
    away; the owner then writes. The frames the key got after the change, and whether it ended."""
    container = fake_container(tmp_path, events_ping_s=300, token="owner-token")
    brain = container.brains.create("Notes", slug="notes", visibility="tenant")
    brains = [brain.id] if limited else None  # a key naming the brain reads it however it is shared
    key = container.keys.create(name="reader", tenant="local", scopes=["documents:read"], brains=brains)
    owner = {"Authorization": "Bearer owner-token", **OCTET}
    after: list[Frame] = []
    ended = False
    with (
        serve(create_app(container)) as base,
        httpx.Client(base_url=base, timeout=TIMEOUT) as http,
        http.stream(
            "GET", "/v1/brains/notes/events", headers={"Authorization": f"Bearer {key.plaintext}"}
        ) as s,
    ):
        sse = SseReader(s.iter_lines())
        assert sse.next().event == "ready"
        http.put("/v1/brains/notes/documents", params={"path": "before.md"}, content=b"x", headers=owner)
        assert json.loads(sse.next().data)["path"] == "before.md"  # allowed until the change
        change(container, key.key.id)
        for n in range(writes):
            url = "/v1/brains/notes/documents"
            http.put(url, params={"path": f"secret-{n}.md"}, content=b"x", headers=owner).raise_for_status()
        try:
            after.append(sse.next())
        except (EOFError, httpx.HTTPError):
            ended = True
    return after, ended


def test_a_stream_ends_once_its_key_is_revoked(tmp_path: Path) -> None:
    after, ended = _keyed_stream(tmp_path, lambda c, key_id: c.keys.revoke(key_id))
    assert ended and after == []


def test_a_stream_ends_once_its_brain_is_made_private(tmp_path: Path) -> None:
    def private(container: Container, _key_id: str) -> None:
        with access.as_system():
            container.brains.update("notes", visibility="private", owner="local")  # the token's

    after, ended = _keyed_stream(tmp_path, private, limited=False)
    assert ended and after == []


def test_a_key_revoked_by_another_process_ends_its_stream_within_a_recheck(tmp_path: Path) -> None:
    def elsewhere(container: Container, key_id: str) -> None:  # `cairn keys revoke`: its own service
        ApiKeyService(container.adapters.records, container.adapters.clock).revoke(key_id)
        time.sleep(RECHECK_S + 0.2)

    after, ended = _keyed_stream(tmp_path, elsewhere)
    assert ended and after == []


def test_a_busy_brain_costs_an_open_stream_one_access_read_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    after, ended = [], False

    def counting(container: Container, _key_id: str) -> None:
        revoked = container.keys.revoked
        monkeypatch.setattr(container.keys, "revoked", lambda s: reads.append(s) or revoked(s))

    after, ended = _keyed_stream(tmp_path, counting, writes=40)
    assert not ended and len(after) == 1  # still allowed: read it, and went on
    assert len(reads) <= 3  # 40 changes in well under RECHECK_S each: not one read per frame


def test_a_caller_holds_at_most_max_streams_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "MAX_STREAMS", 2)
    container = _container(tmp_path, ping_s=300)
    with (
        serve(create_app(container)) as base,
        httpx.Client(base_url=base, timeout=TIMEOUT) as http,
        http.stream("GET", "/v1/brains/notes/events") as first,
        http.stream("GET", "/v1/brains/notes/events") as second,
    ):
        readers = [SseReader(s.iter_lines()) for s in (first, second)]  # kept: a dropped one closes
        assert [r.next().event for r in readers] == ["ready", "ready"]
        third = http.get("/v1/brains/notes/events")
        assert third.status_code == 429 and third.headers["retry-after"] == "5"
        assert third.json()["code"] == "rate_limited" and "holds 2 change streams" in third.json()["detail"]
    assert _wait_for(lambda: _subscribers(container, "notes") == 0)


def test_a_burst_of_streams_takes_no_more_than_max_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slot is taken when the request is answered, not once its stream starts: with every
    stream held before its first frame, a burst of six still gets two streams and four 429s
    (counted before the stream subscribed, 27 to 33 of a burst got through a cap of 16)."""
    monkeypatch.setattr(events, "MAX_STREAMS", 2)
    container = _container(tmp_path, ping_s=300)
    release = threading.Event()
    follow = container.events.follow
    monkeypatch.setattr(container.events, "follow", lambda: release.wait(10) and follow())
    statuses: list[int] = []

    def open_one(http: httpx.Client) -> None:
        with http.stream("GET", "/v1/brains/notes/events") as stream:
            statuses.append(stream.status_code)
            if stream.status_code == 200:
                assert SseReader(stream.iter_lines()).next().event == "ready"

    with serve(create_app(container)) as base, httpx.Client(base_url=base, timeout=TIMEOUT) as http:
        burst = [threading.Thread(target=open_one, args=(http,)) for _ in range(6)]
        for thread in burst:
            thread.start()
        assert _wait_for(lambda: statuses.count(429) == 4)
        release.set()
        for thread in burst:
            thread.join(10)
    assert sorted(statuses) == [200, 200, 429, 429, 429, 429]
    assert _wait_for(lambda: _subscribers(container, "notes") == 0)
