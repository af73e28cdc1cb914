"""Change events of other processes on one embedded store (services/events.py with a ChangeLog):
two buses over one log file stand for two processes. What one publishes reaches the other's
subscribers when it follows, once, with the same visibility rule; its own events are not told
twice; nothing from before a subscriber attached reaches it; a log that fails never fails a write."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_change_log import SqliteChangeLog
from cairn.ports.change_log import ChangeLogError, LoggedChange
from cairn.services import events as events_module
from cairn.services.events import ChangeEvent, EventBus, Subscription

WHEN = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


@pytest.fixture(autouse=True)
def no_follow_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events_module, "FOLLOW_S", 0.0)  # every look is made


def change(path: str, owner: str | None = None, kind: str = "created", old: str | None = None) -> ChangeEvent:
    return ChangeEvent(kind=kind, path=path, when=WHEN, old_path=old, owner=owner)  # type: ignore[arg-type]


async def drained(sub: Subscription) -> list[ChangeEvent]:
    out = []
    while (event := await sub.next(0.05)) is not None:
        out.append(event)
    return out


def test_another_processs_events_reach_a_subscriber_once_with_its_visibility(tmp_path: Path) -> None:
    here = EventBus(SqliteChangeLog(tmp_path / "changes.sqlite3"))
    there = EventBus(SqliteChangeLog(tmp_path / "changes.sqlite3"))

    async def run() -> None:
        here.follow()
        everyone = here.subscribe("brn_a")
        not_bob = here.subscribe("brn_a", sees=lambda owner: owner != "bob")
        other_brain = here.subscribe("brn_b")
        there.publish("brn_a", [change("notes/a.md", "alice"), change("notes/b.md", "bob")])
        there.publish("brn_a", [change("notes/c.md", kind="renamed", old="notes/a.md")])
        here.publish("brn_a", [change("notes/mine.md")])  # this process's own
        assert [e.path for e in await drained(everyone)] == ["notes/mine.md"]

        here.follow()
        here.follow()  # a second look finds nothing new

        told = await drained(everyone)
        assert told == [change("notes/a.md", "alice"), change("notes/b.md", "bob"), told[2]]
        assert (told[2].kind, told[2].old_path, told[2].when) == ("renamed", "notes/a.md", WHEN)
        assert [e.path for e in await drained(not_bob)] == ["notes/mine.md", "notes/a.md", "notes/c.md"]
        assert await drained(other_brain) == []

    asyncio.run(run())


def test_a_subscriber_hears_nothing_logged_before_it_attached(tmp_path: Path) -> None:
    here = EventBus(SqliteChangeLog(tmp_path / "changes.sqlite3"))
    there = EventBus(SqliteChangeLog(tmp_path / "changes.sqlite3"))

    async def run() -> None:
        there.publish("brn_a", [change("old/news.md")])
        here.follow()  # as a stream does before it subscribes
        sub = here.subscribe("brn_a")
        there.publish("brn_a", [change("new/news.md")])
        here.follow()
        assert [e.path for e in await drained(sub)] == ["new/news.md"]

    asyncio.run(run())


class BrokenLog:
    def append(self, origin: str, brain_id: str, payloads: list[str]) -> None:
        raise ChangeLogError("change log changes.sqlite3: disk I/O error")

    def mark(self) -> int:
        raise ChangeLogError("change log changes.sqlite3: disk I/O error")

    def since(self, mark: int, limit: int) -> list[LoggedChange]:
        raise ChangeLogError("change log changes.sqlite3: disk I/O error")

    def forget(self, brain_ids: list[str]) -> None:
        raise ChangeLogError("change log changes.sqlite3: disk I/O error")


def test_a_log_that_fails_never_fails_a_publish_and_this_process_still_hears_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus(BrokenLog())

    async def run() -> None:
        sub = bus.subscribe("brn_a")
        bus.publish("brn_a", [change("notes/a.md")])
        bus.follow()
        assert [e.path for e in await drained(sub)] == ["notes/a.md"]

    asyncio.run(run())
    assert "not shared with other processes" in caplog.text and "could not be read" in caplog.text


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        '{"kind":"exploded","path":"a.md","when":"2026-12-02T09:30:00Z"}',
        '{"kind":"created","path":7,"when":"2026-12-02T09:30:00Z"}',
        '{"kind":"created","path":"a.md","when":"yesterday"}',
        '{"kind":"created","path":"a.md"}',
        "[]",
    ],
)
def test_an_entry_this_release_cannot_read_is_skipped(tmp_path: Path, payload: str) -> None:
    log = SqliteChangeLog(tmp_path / "changes.sqlite3")
    bus = EventBus(log)

    async def run() -> None:
        bus.follow()
        sub = bus.subscribe("brn_a")
        log.append("another-process", "brn_a", [payload, change("good.md").logged()])
        bus.follow()
        assert [e.path for e in await drained(sub)] == ["good.md"]

    asyncio.run(run())


def test_a_subscriber_hears_what_is_logged_after_the_log_file_was_replaced(tmp_path: Path) -> None:
    path = tmp_path / "changes.sqlite3"
    here = EventBus(SqliteChangeLog(path))

    async def run() -> None:
        here.follow()
        sub = here.subscribe("brn_a")
        EventBus(SqliteChangeLog(path)).publish("brn_a", [change(f"old/{i}.md") for i in range(5)])
        here.follow()
        assert len(await drained(sub)) == 5
        for suffix in ("", "-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)  # another process found it damaged
        EventBus(SqliteChangeLog(path)).publish("brn_a", [change("new/1.md")])  # its numbers restart at 1
        here.follow()
        assert [e.path for e in await drained(sub)] == ["new/1.md"]

    asyncio.run(run())
