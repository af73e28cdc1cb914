"""The library view's listing (services/mnemosyne/libraries.py): exact after every write even when kept
between calls, paged across libraries by offset, and a listing read during a write is not kept."""

from __future__ import annotations

import threading
from pathlib import Path

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, SCOPES, Principal, Via
from cairn.bootstrap import Container
from cairn.services.mnemosyne.libraries import Library
from tests.fakes.container import fake_container


def shelf(tmp_path: Path) -> tuple[Container, Library, Library]:
    c = fake_container(tmp_path)
    assert c.libraries.listings is not None  # the embedded store keeps listings
    a = c.libraries.describe(c.brains.create("A library", slug="a").id, library_type="fiction")
    b = c.libraries.describe(c.brains.create("B library", slug="b").id, library_type="journal")
    for i in range(5):
        c.ingest.remember(a.brain, f"# A{i}\n\nText {i}.", path=f"a/{i}.md")
        c.ingest.remember(b.brain, f"# B{i}\n\nText {i}.", path=f"b/{i}.md")
    return c, c.libraries.library(a.uid), c.libraries.library(b.uid)


def titles(c: Container, libs: list[Library], *, limit: int = 50, offset: int = 0) -> list[str]:
    return [i.title for i in c.libraries.items(libs, limit=limit, offset=offset)]


def test_offsets_run_across_libraries_in_order(tmp_path: Path) -> None:
    c, a, b = shelf(tmp_path)
    assert titles(c, [a, b]) == [f"A{i}" for i in range(5)] + [f"B{i}" for i in range(5)]
    assert titles(c, [a, b], limit=3, offset=4) == ["A4", "B0", "B1"]
    assert titles(c, [a, b], limit=3, offset=9) == ["B4"] and titles(c, [a, b], offset=10) == []


def test_a_kept_listing_follows_every_write(tmp_path: Path) -> None:
    c, a, b = shelf(tmp_path)
    assert titles(c, [a]) == [f"A{i}" for i in range(5)]  # now kept
    assert any(uid == a.uid for uid, _view in (c.libraries.listings or {}))
    c.ingest.remember(a.brain, "# A9\n\nNew.", path="a/9.md")
    assert titles(c, [a])[-1] == "A9"
    c.documents.delete(a.brain, "a/0.md")
    assert titles(c, [a])[0] == "A1"
    c.documents.rename(a.brain, "a/1.md", "z/1.md")
    assert titles(c, [a])[-1] == "A1" and titles(c, [b]) == [f"B{i}" for i in range(5)]


def test_a_listing_read_while_a_write_lands_is_not_kept(tmp_path: Path) -> None:
    c, a, _ = shelf(tmp_path)
    raw = c.documents.repo.raw
    landed = threading.Event()

    def raw_then_write(brain_id: str, prefix: str = ""):  # type: ignore[no-untyped-def]
        rows = list(raw(brain_id, prefix))
        if not landed.is_set():
            landed.set()
            c.ingest.remember(a.brain, "# A7\n\nDuring.", path="a/7.md")
        return iter(rows)

    c.documents.repo.raw = raw_then_write  # type: ignore[method-assign]
    assert "A7" not in titles(c, [a])  # read before the write
    assert a.uid not in (c.libraries.listings or {})
    assert "A7" in titles(c, [a])  # read again, not the stale one


def test_a_call_naming_no_library_covers_only_the_callers_own_tenants(container: Container) -> None:
    gamma = Principal("gamma", "admin", frozenset(SCOPES), Via.api_key)
    beta = Principal("beta", "admin", frozenset(SCOPES), Via.api_key)
    with access.acting_as(gamma, ADMIN):
        theirs = container.brains.create("Gamma handbook", visibility="public")
    with access.acting_as(beta, ADMIN):
        own = container.brains.create("Beta notes", visibility="tenant")
    with access.acting_as(beta, READ):
        listed = {lib.brain.id for lib in container.libraries.libraries()}
        unnamed = {lib.brain.id for lib in container.libraries.scope()}
        uid = next(lib.uid for lib in container.libraries.libraries() if lib.brain.id == theirs.id)
        named = [lib.brain.id for lib in container.libraries.scope(library_uid=uid)]
    assert listed == {own.id, theirs.id}  # listed: readable
    assert unnamed == {own.id}  # searched unasked: only its own tenant's
    assert named == [theirs.id]  # searched when named
