"""Whole-brain archives (services/archive/) on the embedded store: SQLite records, file blobs,
the SQLite chunk index, through the real composition root. Export, restore into a fresh store and
into another brain of the same store, re-runs, refused headers and records, the restoring gate."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import MemoryType
from cairn.domain.pages import CollectionRestoring
from cairn.entrypoints.mcp.gbrain import tools as gbrain
from cairn.entrypoints.mcp.gbrain.args import NoArgs
from cairn.entrypoints.mcp.gbrain.services import gbrain_services
from cairn.entrypoints.mcp.kit import SurfaceDeps
from cairn.services.archive.restore import RestoreIncomplete
from cairn.services.documents.inputs import DocumentInput
from cairn.services.ingest.inputs import LocalFilePolicy
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery
from tests.fakes.container import fake_adapters
from tests.support.archive_scenario import (
    ASKED,
    SLUG,
    WIFI,
    counts,
    exported,
    fill,
    recalled_thought,
    snapshot,
    thought_row,
    wifi_answers,
    wifi_chain,
)

DIM = 64


@pytest.fixture
def store(tmp_path: Path) -> Callable[[str], Container]:
    """A new embedded store (its own data directory) per name."""

    def make(name: str) -> Container:
        data = tmp_path / name
        data.mkdir()
        adapters = replace(
            fake_adapters(DIM),
            records=SqliteRecordStore(data / "records.sqlite3"),
            blobs=FileBlobStore(data / "blobs"),
            chunks=SqliteChunkIndex(data / "chunks.sqlite3", data / "vectors", DIM),
        )
        return build_container(Settings(data_dir=data), adapters)

    return make


def archived(store: Callable[[str], Container]) -> tuple[Container, list[dict[str, Any]], Container]:
    """A filled store, its brain's archive, and a fresh store to restore it into."""
    source = store("source")
    return source, exported(source, fill(source).brain), store("target")


def test_a_restore_into_a_fresh_store_gives_back_every_item(store: Callable[[str], Container]) -> None:
    source = store("source")
    filled = fill(source)
    records = exported(source, filled.brain)

    kinds = [r["kind"] for r in records]
    assert kinds[0] == "cairn-archive" and records[0]["format"] == 2
    assert records[-1] == {"kind": "end", "records": len(records) - 2}
    assert kinds.count("document") == 5 and kinds.count("memory") == 4  # the deleted note stays behind
    assert kinds.count("link") == 3 and kinds.count("raw") == 1 and kinds.count("gap") == 2
    memories = [r["id"] for r in records if r["kind"] == "memory"]
    assert memories.index(filled.old_fact) < memories.index(filled.new_fact)  # oldest first
    binary = next(r for r in records if r.get("path") == "files/blob.bin")
    assert binary["content"] is None and binary["content_base64"]
    assert all("query" not in r for r in records if r["kind"] == "gap")

    target = store("target")
    report = target.archive.import_(None, records)
    brain = target.brains.get(SLUG)
    assert report.created_brain and report.brain.id == brain.id and brain.name == "Team notes"
    assert dict(report.written) == {"document": 5, "memory": 4, "link": 3, "raw": 1, "gap": 2}
    assert report.errors == [] and target.pages.state(brain).state == "active"

    before, after = snapshot(source, filled.brain), snapshot(target, brain)
    for part in ("docs", "pages", "memories", "links", "raw", "gaps"):
        assert after[part] == before[part], part
    assert (
        target.pages.get(f"{SLUG}::people/alice").render()
        == source.pages.get(f"{SLUG}::people/alice").render()
    )

    current = [
        d.id
        for d in target.memories.of_type(brain, [MemoryType.fact])
        if d.memory is not None and d.memory.current
    ]
    assert current == [filled.new_fact]
    old = target.memories.record(brain, filled.old_fact)
    assert old.memory is not None and old.memory.superseded_by == filled.new_fact
    hits = target.memories.search(brain, "billing CockroachDB", MemoryQuery(client_ids=("acme",)))
    assert [h.memory.id for h in hits][:1] == [filled.new_fact]
    assert {g[0] for g in after["gaps"]} == {hashlib.sha256(q.encode()).hexdigest() for q in ASKED}


def test_running_the_import_again_changes_nothing(store: Callable[[str], Container]) -> None:
    source = store("source")
    filled = fill(source)
    records = exported(source, filled.brain)
    target = store("target")
    target.archive.import_(None, records)
    brain = target.brains.get(SLUG)
    held, before = counts(target, brain), snapshot(target, brain)
    versions = {d.path: d.version for d in target.documents.repo.list(brain.id)}

    again = target.archive.import_(None, records)

    assert not again.created_brain and sum(again.written.values()) == 0 and again.errors == []
    assert dict(again.unchanged) == {"document": 5, "memory": 4, "link": 3, "raw": 1, "gap": 2}
    assert counts(target, brain) == held and snapshot(target, brain) == before
    assert {d.path: d.version for d in target.documents.repo.list(brain.id)} == versions


def test_a_copy_into_another_brain_of_the_same_store(store: Callable[[str], Container]) -> None:
    c = store("one")
    filled = fill(c)
    records = exported(c, filled.brain)

    report = c.archive.import_("copy", records)
    again = c.archive.import_("copy", records)

    copy = c.brains.get("copy")
    assert report.errors == [] and dict(report.written)["memory"] == 4
    assert sum(again.written.values()) == 0 and again.errors == []
    assert snapshot(c, copy, ids=False) == snapshot(c, filled.brain, ids=False)
    assert counts(c, copy) == counts(c, filled.brain)
    kept = c.memories.record(filled.brain, filled.new_fact)  # the original is untouched
    assert kept.memory is not None and kept.memory.current


def test_a_header_of_a_format_not_read_is_refused_and_nothing_is_written(
    store: Callable[[str], Container],
) -> None:
    _source, records, target = archived(store)

    for header, message in (
        ({**records[0], "format": 3}, r"archive format 3 is not one this Cairn reads \(formats 1, 2\)"),
        ({**records[0], "format": True}, r"archive format True is not one this Cairn reads"),
        ({"kind": "zengram-export"}, "not a Cairn archive"),
        ({**records[0], "brain": {"slug": SLUG}}, "line 1: bad header: brain.name"),
    ):
        with pytest.raises(InvalidInput, match=message):
            target.archive.import_(None, [header, *records[1:]])
    with pytest.raises(InvalidInput, match="empty"):
        target.archive.import_(None, [])
    assert target.brains.list() == []


def test_a_malformed_record_stops_the_restore_which_stays_restoring_until_a_rerun(
    store: Callable[[str], Container],
) -> None:
    source, records, target = archived(store)
    first_link = next(i for i, r in enumerate(records) if r["kind"] == "link")
    broken = {k: v for k, v in records[first_link].items() if k != "target"}

    with pytest.raises(RestoreIncomplete) as stopped:
        target.archive.import_(None, [*records[:first_link], broken, *records[first_link + 1 :]])

    message = stopped.value.message
    assert f"line {first_link + 1}: bad record: link.target: Field required" in message
    assert "stays `restoring`" in message and "import a whole copy of the archive" in message
    brain = target.brains.get(SLUG)
    assert target.pages.state(brain).state == "restoring"
    with pytest.raises(CollectionRestoring):
        target.pages.put(f"{SLUG}::people/carol", "---\ntitle: Carol\n---\nCarol.\n")
    deps = SurfaceDeps(gbrain_services(target), LocalFilePolicy(root=None, max_bytes=1))
    (listed,) = json.loads(gbrain.collections(deps, NoArgs()).content[0].text)  # type: ignore[union-attr]
    # the only brain is the caller's default: gbrain names its collection `default`
    assert listed["name"] == "default" and listed["state"] == "restoring" and listed["restore_in_progress"]
    assert counts(target, brain)[1] == 0  # nothing after the bad record

    resumed = target.archive.import_(None, records)
    assert resumed.errors == [] and target.pages.state(target.brains.get(SLUG)).state == "active"
    assert dict(resumed.written) == {"link": 3, "raw": 1, "gap": 2}
    assert snapshot(target, brain) == snapshot(source, source.brains.get(SLUG))


def test_the_collection_is_restoring_while_records_are_written(store: Callable[[str], Container]) -> None:
    _source, records, target = archived(store)
    seen: list[str] = []

    def watched() -> Iterator[dict[str, Any]]:
        yield records[0]
        for record in records[1:]:
            seen.append(target.pages.state(target.brains.get(SLUG)).state)
            yield record

    target.archive.import_(None, watched())
    assert set(seen) == {"restoring"} and len(seen) == len(records) - 1
    assert target.pages.state(target.brains.get(SLUG)).state == "active"


def test_records_the_brain_refuses_are_reported_by_line_and_the_rest_restored(
    store: Callable[[str], Container],
) -> None:
    source = store("source")
    records = exported(source, fill(source).brain)
    stray = {**next(r for r in records if r["kind"] == "link"), "source": "people/nobody"}
    unknown = {"kind": "session", "id": "x"}
    target = store("target")

    def counted(*extra: dict[str, Any]) -> list[dict[str, Any]]:
        return [*records[:-1], *extra, {"kind": "end", "records": len(records) - 2 + len(extra)}]

    report = target.archive.import_(None, counted(stray))
    assert report.errors == [f"line {len(records)}: link: link source not found in the brain: people/nobody"]
    assert target.pages.state(target.brains.get(SLUG)).state == "active"

    with pytest.raises(RestoreIncomplete, match=f"line {len(records)}: bad record: .*session"):
        target.archive.import_(None, counted(unknown))


@pytest.mark.parametrize("bad", ["../../x", "", "doc/1", "-lead", "x" * 129, "doc 1"])
def test_a_document_whose_id_is_not_an_id_is_refused_and_changes_nothing(
    store: Callable[[str], Container], bad: str
) -> None:
    source = store("source")
    records = exported(source, fill(source).brain)
    plain = next(i for i, r in enumerate(records) if r.get("path") == "notes/plain.md")
    records[plain] = {**records[plain], "id": bad}
    target = store("target")

    report = target.archive.import_(None, records)

    brain = target.brains.get(SLUG)
    [error] = report.errors
    assert error.startswith(f"line {plain + 1}: document: document id ") and "is not an id: 1-128" in error
    assert report.written["document"] == 4
    assert "notes/plain.md" not in {d.path for d in target.documents.repo.list(brain.id)}
    assert all(d.id != bad for d in target.documents.repo.list(brain.id))


def test_a_document_larger_than_any_other_way_in_stores_is_refused_and_the_rest_restored(
    store: Callable[[str], Container],
) -> None:
    source = store("source")
    brain = fill(source).brain
    big = b"# Big\n\n" + b"x" * 50_000
    source.documents.write(brain, "notes/big.md", big)
    records = exported(source, brain)
    target = store("target")
    target.archive.max_document_bytes = 40_000  # as the file cap would refuse it

    report = target.archive.import_(None, records)

    assert (
        len(report.errors) == 1
        and "notes/big.md" in report.errors[0]
        and "at most 40,000" in report.errors[0]
    )
    restored = target.brains.get(SLUG)
    assert not target.documents.exists(restored, "notes/big.md")
    assert report.written["document"] == sum(r["kind"] == "document" for r in records) - 1


@pytest.mark.parametrize(
    ("failure", "told"),
    [
        (Conflict("the store is unreachable"), "writing links: the store is unreachable — the restore"),
        # an unexpected error's own text (a path, a library's words) goes to the server log only
        (OSError("No space left on device: '/srv/secret-path/b'"), "an unexpected error (the server log"),
    ],
)
def test_a_write_that_fails_stops_the_restore_and_a_rerun_finishes_it(
    store: Callable[[str], Container],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
    told: str,
) -> None:
    source, records, target = archived(store)

    def lost(*_: object) -> None:
        raise failure

    with monkeypatch.context() as patched:
        patched.setattr(target.graph, "add_many", lost)
        with pytest.raises(RestoreIncomplete) as stopped:
            target.archive.import_(None, records)
    assert told in stopped.value.message
    if isinstance(failure, OSError):
        assert "secret-path" not in stopped.value.message and "OSError" not in stopped.value.message
        assert "secret-path" in caplog.text  # the operator still learns what happened
    assert target.pages.state(target.brains.get(SLUG)).state == "restoring"

    finished = target.archive.import_(None, records)
    assert finished.written["link"] == 3 and finished.written["document"] == 0
    assert target.pages.state(target.brains.get(SLUG)).state == "active"
    assert snapshot(target, target.brains.get(SLUG)) == snapshot(source, source.brains.get(SLUG))


def test_an_archive_cut_short_at_a_line_stops_the_restore_which_a_whole_copy_finishes(
    store: Callable[[str], Container],
) -> None:
    source, records, target = archived(store)
    first_link = next(i for i, r in enumerate(records) if r["kind"] == "link")

    with pytest.raises(RestoreIncomplete) as stopped:
        target.archive.import_(None, records[:first_link])  # every line whole, the rest missing
    message = stopped.value.message
    assert f"ends after line {first_link:,} without its end record: it was cut short" in message
    assert "import a whole copy of the archive" in message
    brain = target.brains.get(SLUG)
    assert target.pages.state(brain).state == "restoring"

    miscounted = [*records[:first_link], {"kind": "end", "records": len(records) - 2}]
    with pytest.raises(RestoreIncomplete, match=f"counts {len(records) - 2} records and the archive holds"):
        target.archive.import_(None, miscounted)
    with pytest.raises(RestoreIncomplete, match="a record after the archive's end record"):
        target.archive.import_(None, [*records, records[1]])
    with pytest.raises(RestoreIncomplete, match="bad record: records: Input should be greater"):
        target.archive.import_(None, [*records[:-1], {"kind": "end", "records": -1}])
    assert target.pages.state(target.brains.get(SLUG)).state == "restoring"

    finished = target.archive.import_(None, records)
    assert finished.errors == [] and target.pages.state(target.brains.get(SLUG)).state == "active"
    assert snapshot(target, brain) == snapshot(source, source.brains.get(SLUG))


def test_a_format_1_archive_without_an_end_record_is_still_read(store: Callable[[str], Container]) -> None:
    source, records, target = archived(store)

    report = target.archive.import_(None, [{**records[0], "format": 1}, *records[1:-1]])
    assert report.errors == [] and report.written["document"] == 5
    assert snapshot(target, target.brains.get(SLUG)) == snapshot(source, source.brains.get(SLUG))


def test_a_part_of_an_archive_is_restored_without_the_whole_archives_end(
    store: Callable[[str], Container],
) -> None:
    source, records, target = archived(store)
    first_link = next(i for i, r in enumerate(records) if r["kind"] == "link")

    head = target.archive.import_(None, records[:first_link], part=True)
    tail = target.archive.import_(None, [records[0], *records[first_link:]], part=True)
    brain = target.brains.get(SLUG)
    assert head.errors == tail.errors == [] and tail.written["link"] == 3
    assert target.pages.state(brain).state == "active"
    assert snapshot(target, brain) == snapshot(source, source.brains.get(SLUG))


def test_an_older_archive_never_reverts_what_the_brain_changed_after_it(
    store: Callable[[str], Container],
) -> None:
    c = store("only")
    filled = fill(c)
    records = exported(c, filled.brain)
    alice = c.pages.get(f"{SLUG}::people/alice").document
    c.documents.write(filled.brain, "notes/plain.md", b"# Plain\n\nRewritten after the backup.\n")
    c.raw_data.put(filled.brain, alice.id, "exa", {"source": "exa", "score": 0.5}, overwrite=True)

    report = c.archive.import_(None, records)

    assert report.errors == [] and report.written["document"] == 0 and report.written["raw"] == 0
    assert [k.split(": ", 1)[1] for k in report.kept] == [
        "'notes/plain.md'",
        "'people/alice' ('exa' raw data)",
    ]
    line = next(i + 1 for i, r in enumerate(records) if r.get("path") == "notes/plain.md")
    assert report.kept[0].startswith(f"line {line}: ")
    assert c.documents.content(c.documents.get(filled.brain, "notes/plain.md")).endswith(
        b"after the backup.\n"
    )
    held = c.raw_data.get(filled.brain, alice.id, "exa")
    assert held is not None and held[1] == {"source": "exa", "score": 0.5}


def test_a_document_changed_before_the_archive_was_made_is_restored_to_the_archives(
    store: Callable[[str], Container],
) -> None:
    older, newer = store("older"), store("newer")
    fill(older)
    filled = fill(newer)
    newer.documents.write(filled.brain, "notes/plain.md", b"# Plain\n\nThe archived text.\n")
    records = exported(newer, filled.brain)
    older.adapters.clock.advance(-3600)  # type: ignore[attr-defined]  # its change is older still
    older.documents.write(older.brains.get(SLUG), "notes/plain.md", b"# Plain\n\nA stale text.\n")

    report = older.archive.import_(None, records)
    assert report.kept == [] and report.written["document"] == 1
    restored = older.documents.get(older.brains.get(SLUG), "notes/plain.md")
    assert older.documents.content(restored).endswith(b"The archived text.\n")


def test_restores_of_one_archive_at_once_make_its_brain_once_and_each_link_once(
    store: Callable[[str], Container],
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    source, records, target = archived(store)
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda _: target.archive.import_(None, records, part=True), range(4)))

    assert sum(r.created_brain for r in reports) == 1, [r.errors for r in reports]
    assert all(r.errors == [] for r in reports), [r.errors for r in reports]
    assert sum(r.written["link"] for r in reports) == 3
    brain = target.brains.get(SLUG)
    assert snapshot(target, brain) == snapshot(source, source.brains.get(SLUG))


def test_a_value_whose_successor_was_deleted_comes_back_superseded(
    store: Callable[[str], Container],
) -> None:
    # Given a fact key whose current value was deleted: its earlier value stays superseded
    source = store("source")
    brain, old, new = wifi_chain(source)
    held = source.memories.record(brain, old).memory
    assert held is not None and held.valid_from is not None and held.valid_to is not None
    at = [held.valid_from + (held.valid_to - held.valid_from) / 2, held.valid_to + timedelta(days=1)]
    before = wifi_answers(source, brain, at)
    assert before["current"] == before["found"] == [] and before["then"] == [
        ["The office wifi uses WPA2"],
        [],
    ]
    records = exported(source, brain)
    assert [r["id"] for r in records if r["kind"] == "memory"] == [old]  # the deleted one stays behind

    # When the archive is restored into a fresh store, and again
    target = store("target")
    report = target.archive.import_(None, records)
    again = target.archive.import_(None, records)

    # Then the same value is current (none), with the same end, and each time has the same answer
    restored = target.brains.get(WIFI)
    assert report.errors == [] and report.written["memory"] == 1 and again.written["memory"] == 0
    assert wifi_answers(target, restored, at) == before
    kept = target.memories.record(restored, old).memory
    assert kept is not None and kept.superseded_by == new and kept.valid_to == held.valid_to
    # and a value stored under the key now goes on from the line, as where it was exported: it
    # supersedes the value kept (it started a chain of its own, both open from their starts)
    for c, b in ((source, brain), (target, restored)):
        later = c.memories.store(b, MemoryInput(MemoryType.fact, "The office wifi uses WPA3", key=WIFI))
        assert later.supersedes == old and later.memory.memory is not None and later.memory.memory.current
        ended = c.memories.record(b, old).memory
        assert ended is not None and ended.superseded_by == later.memory.id
        assert ended.valid_to == held.valid_to  # it ended sooner than the new value began


def works_at(c: Container, brain_slug: str = SLUG) -> list[tuple[str, str | None, str | None]]:
    """Alice's works_at links to Anvil: (kind, valid_from, valid_until), in id order."""
    brain = c.brains.get(brain_slug)
    alice = c.documents.get(brain, "people/alice")
    return [
        (link.kind, link.valid_from, link.valid_until)
        for link in c.graph.links.outgoing_numbered(brain.id, alice.id)
        if link.kind == "works_at"
    ]


def close_works_at(c: Container, until: str) -> None:
    brain = c.brains.get(SLUG)
    alice = c.documents.get(brain, "people/alice")
    link = next(x for x in c.graph.links.outgoing_numbered(brain.id, alice.id) if x.kind == "works_at")
    c.graph.close(brain, link.id, until)


def test_an_older_archive_never_opens_again_a_link_closed_after_it(store: Callable[[str], Container]) -> None:
    c = store("only")
    filled = fill(c)
    records = exported(c, filled.brain)
    close_works_at(c, "2026-11")
    before = snapshot(c, filled.brain)

    report = c.archive.import_(None, records)

    assert report.errors == [] and report.written["link"] == 0
    assert works_at(c) == [("works_at", "2024-03", "2026-11")]
    assert snapshot(c, filled.brain) == before
    line = next(i + 1 for i, r in enumerate(records) if r.get("relationship") == "works_at")
    assert report.kept == [f"line {line}: 'people/alice' ('works_at' link to 'companies/anvil')"]


def test_a_newer_archive_closes_the_link_it_holds_closed(store: Callable[[str], Container]) -> None:
    source, target = store("source"), store("target")
    filled = fill(source)
    target.archive.import_(None, exported(source, filled.brain))
    close_works_at(source, "2026-11")

    report = target.archive.import_(None, exported(source, filled.brain))

    assert report.errors == [] and report.kept == [] and report.written["link"] == 1
    assert works_at(target) == [("works_at", "2024-03", "2026-11")]
    assert snapshot(target, target.brains.get(SLUG)) == snapshot(source, filled.brain)


def test_an_older_archive_never_puts_back_tags_or_a_title_changed_after_it(
    store: Callable[[str], Container],
) -> None:
    c = store("only")
    filled = fill(c)
    records = exported(c, filled.brain)
    c.pages.tags(f"{SLUG}::people/alice", remove=["lab"])
    plain = c.documents.get(filled.brain, "notes/plain.md")
    c.documents.write(
        filled.brain,
        "notes/plain.md",
        c.documents.content(plain),
        DocumentInput(title="Renamed after the backup", tags=["misc"], metadata={"origin": "cli", "rank": 3}),
    )
    before = snapshot(c, filled.brain)

    report = c.archive.import_(None, records)

    assert report.errors == [] and report.written["document"] == 0
    assert sorted(k.split(": ", 1)[1] for k in report.kept) == ["'notes/plain.md'", "'people/alice'"]
    assert c.pages.get(f"{SLUG}::people/alice").tags == ["founder"]
    assert c.documents.get(filled.brain, "notes/plain.md").title == "Renamed after the backup"
    assert snapshot(c, filled.brain) == before


def test_a_thoughtmcp_memory_goes_as_its_row_stands(store: Callable[[str], Container]) -> None:
    source = store("source")
    brain, memory_id = recalled_thought(source)
    row = thought_row(source, brain, memory_id)
    facet = source.documents.repo.get_by_id(memory_id).memory  # type: ignore[union-attr]
    assert facet is not None and facet.strength == 0.4 != row[0] and facet.access_count == 0 != row[3]

    records = exported(source, brain)
    target = store("target")
    report = target.archive.import_(None, records)

    archived = next(r["memory"] for r in records if r.get("id") == memory_id)
    assert (archived["strength"], archived["access_count"]) == (row[0], row[3])
    assert report.errors == [] and thought_row(target, target.brains.get("thoughts"), memory_id) == row


def test_a_thoughtmcp_memorys_tag_with_a_comma_is_restored_whole(store: Callable[[str], Container]) -> None:
    from cairn.services.thoughtmcp.models import Filters, Metadata, NewMemory

    source = store("source")
    brain = source.brains.create("Thoughts", slug="thoughts")
    memory = NewMemory(
        "The billing service deploys on Tuesdays", "alice", "s1", "episodic", Metadata(tags=("ops,billing",))
    )
    made = source.thoughts.remember(brain, memory)
    target = store("target")
    report = target.archive.import_(None, exported(source, brain))

    restored = target.brains.get("thoughts")
    found, _ = target.thoughts.recall(restored, "alice", text=None, filters=Filters(tags=("ops,billing",)))
    assert report.errors == [] and [(f.row.id, f.row.tags) for f in found] == [
        (made["memoryId"], ["ops,billing"])
    ]


def test_a_thoughtmcp_memory_with_as_many_and_as_long_tags_as_it_takes_is_restored(
    store: Callable[[str], Container],
) -> None:
    from cairn.services.thoughtmcp.models import Filters, Metadata, NewMemory

    source = store("source")
    brain = source.brains.create("Thoughts", slug="thoughts")
    tags = tuple(f"{i:02d}" + "t" * 98 for i in range(50))
    keywords = tuple(f"{i:02d}" + "k" * 98 for i in range(50))
    memory = NewMemory(
        "The billing service deploys on Tuesdays",
        "alice",
        "s1",
        "episodic",
        Metadata(tags=tags, keywords=keywords),
    )
    made = source.thoughts.remember(brain, memory)
    target = store("target")
    report = target.archive.import_(None, exported(source, brain))

    found, _ = target.thoughts.recall(target.brains.get("thoughts"), "alice", text=None, filters=Filters())
    assert report.errors == [] and [f.row.id for f in found] == [made["memoryId"]]
    assert (found[0].row.tags, found[0].row.keywords) == (list(tags), list(keywords))


def test_many_links_from_one_document_are_each_read_once_not_once_per_write(
    store: Callable[[str], Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each write of LINKS_PER_WRITE links read every link the source held again: a 4 MB part of
    # 28,000 links from one document read 3.9 million, 35 s (docs/PERFORMANCE.md, hostile inputs).
    target = store("target")
    links = target.graph.links
    read = 0
    outgoing = links.outgoing_numbered

    def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        nonlocal read
        for link in outgoing(*args, **kwargs):
            read += 1
            yield link

    monkeypatch.setattr(links, "outgoing_numbered", counted)
    header = {"kind": "cairn-archive", "format": 2, "brain": {"slug": SLUG, "name": "n"}}
    records: list[dict[str, Any]] = [
        {**header, "exported_at": "2026-01-01T00:00:00Z"},
        {"kind": "document", "path": "a.md", "content": "a"},
        {"kind": "document", "path": "b.md", "content": "b"},
    ]
    for i in range(1_000):
        start = f"2000-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        link = {"source": "a.md", "target": "b.md", "relationship": "r", "valid_from": start}
        records.append({"kind": "link", "id": i, **link, "created_at": "2026-01-01T00:00:00Z"})

    first = target.archive.import_(None, records, part=True)
    assert first.errors == [] and first.written["link"] == 1_000
    assert read <= 1_000  # each written link read back once, by the flush after its write

    read = 0
    again = target.archive.import_(None, records, part=True)
    assert again.unchanged["link"] == 1_000 and again.written["link"] == 0
    assert read == 1_000  # the source's links read once for the whole run


def test_a_document_or_raw_row_the_archive_holds_twice_is_reported_as_a_duplicate_not_as_newer(
    store: Callable[[str], Container],
) -> None:
    """A hand-made or concatenated archive holding the same (document, source) row, or the same
    document, twice: the first line is restored, the second reported as a duplicate of it: not as
    a row the brain changed after the archive was made, nor counted as already there."""
    _, records, target = archived(store)
    target.adapters.clock.advance(60)  # type: ignore[attr-defined]  # restored later than exported
    raw_at = next(i for i, r in enumerate(records) if r["kind"] == "raw")
    doc_at = next(i for i, r in enumerate(records) if r.get("path") == "notes/plain.md")
    raw, doc = records[raw_at], records[doc_at]
    twice = [
        *records[: raw_at + 1],
        {**raw, "data": {"other": "value"}},  # the same row, other data
        raw,  # the same row, the same data
        {**doc, "content": "# Plain\n\nAnother text.\n"},
        *records[raw_at + 1 : -1],
    ]
    twice.append({"kind": "end", "records": len(twice) - 1})

    report = target.archive.import_(None, twice)

    first_raw, first_doc = raw_at + 1, doc_at + 1  # lines count from the header's, 1
    assert report.kept == [] and report.errors == []
    assert report.duplicates == [
        f"line {first_raw + 1}: 'people/alice' ('exa' raw data), as line {first_raw}",
        f"line {first_raw + 2}: 'people/alice' ('exa' raw data), as line {first_raw}",
        f"line {first_raw + 3}: 'notes/plain.md', as line {first_doc}",
    ]
    assert report.written["raw"] == 1 and report.written["document"] == 5
    assert report.unchanged["raw"] == report.unchanged["document"] == 0
    brain = target.brains.get(SLUG)
    alice = target.documents.get(brain, "people/alice")
    held = target.raw_data.get(brain, alice.id, "exa")
    assert held is not None and held[1] == raw["data"]  # the first line's
    assert target.documents.content(target.documents.get(brain, "notes/plain.md")) == doc["content"].encode()

    again = target.archive.import_(None, twice)  # a re-run: the first is there, the rest duplicates

    assert again.unchanged["raw"] == 1 and again.kept == [] and again.duplicates == report.duplicates


def test_a_document_whose_first_copy_in_the_archive_is_refused_is_restored_from_its_second(
    store: Callable[[str], Container],
) -> None:
    """A joined archive whose first copy of a document cannot be restored (a tag too long)
    and whose second can: the second is restored, not reported as a duplicate of a refused line."""
    _, records, target = archived(store)
    doc_at = next(i for i, r in enumerate(records) if r.get("path") == "notes/plain.md")
    doc = records[doc_at]
    damaged = {**doc, "tags": ["x" * 300]}  # longer than any tag a brain holds
    joined = [*records[:doc_at], damaged, *records[doc_at + 1 : -1], doc]
    joined.append({"kind": "end", "records": len(joined) - 1})

    report = target.archive.import_(None, joined)

    assert len(report.errors) == 1 and report.errors[0].startswith(f"line {doc_at + 1}: document:")
    assert report.duplicates == []
    brain = target.brains.get(SLUG)
    assert target.documents.content(target.documents.get(brain, "notes/plain.md")) == doc["content"].encode()
