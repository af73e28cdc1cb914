"""Whole-brain archives (services/archive/) on the AWS adapters (tests/support/aws_stack.py):
records on DynamoDB and document bytes and raw rows on S3 under moto, chunks on the OpenSearch
fake. The store already holds the exported brain, so the restore is a copy into another brain:
ids held by the original are not taken (memories get ids derived from theirs), links are rebuilt
by path."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cairn.domain.models import MemoryType
from cairn.services.memory.memory_model import MemoryQuery
from tests.support.archive_scenario import (
    counts,
    exported,
    fill,
    recalled_thought,
    snapshot,
    thought_row,
    wifi_answers,
    wifi_chain,
)
from tests.support.aws_stack import Stack, aws_stack


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with aws_stack(tmp_path, monkeypatch, key_name="archive") as built:
        yield built


def test_export_and_restore_on_dynamodb_s3_and_opensearch(stack: Stack) -> None:
    c = stack.core
    filled = fill(c)
    records = exported(c, filled.brain)
    assert [r["kind"] for r in records].count("memory") == 4

    report = stack.process().archive.import_("restored", records)  # another Lambda instance
    restored = c.brains.get("restored")

    assert report.errors == [] and report.created_brain
    assert dict(report.written) == {"document": 5, "memory": 4, "link": 3, "raw": 1, "gap": 2}
    assert snapshot(c, restored, ids=False) == snapshot(c, filled.brain, ids=False)
    assert c.pages.state(restored).state == "active"
    current = [
        c.memories.text(d)
        for d in c.memories.of_type(restored, [MemoryType.fact])
        if d.memory is not None and d.memory.current
    ]
    assert current == ["Acme moved its billing to CockroachDB"]
    hits = c.memories.search(restored, "billing CockroachDB", MemoryQuery(client_ids=("acme",)))
    assert hits and c.memories.text(hits[0].memory) == current[0]

    held = counts(c, restored)
    again = c.archive.import_("restored", records)
    assert sum(again.written.values()) == 0 and again.errors == []
    assert counts(c, restored) == held


def test_a_value_whose_successor_was_deleted_comes_back_superseded(stack: Stack) -> None:
    c = stack.core
    brain, old, _ = wifi_chain(c)
    held = c.memories.record(brain, old).memory
    assert held is not None and held.valid_from is not None and held.valid_to is not None
    at = [held.valid_from + (held.valid_to - held.valid_from) / 2, held.valid_to + timedelta(days=1)]
    before = wifi_answers(c, brain, at)
    assert before["current"] == [] and before["then"][0] == ["The office wifi uses WPA2"]

    report = stack.process().archive.import_("wifi-copy", exported(c, brain))

    assert report.errors == [] and report.written["memory"] == 1
    assert wifi_answers(c, c.brains.get("wifi-copy"), at) == before


def test_an_older_archive_never_opens_again_a_link_closed_after_it(stack: Stack) -> None:
    c = stack.core
    filled = fill(c)
    stack.process().archive.import_("restored", exported(c, filled.brain))
    restored = c.brains.get("restored")
    older = exported(c, restored)
    alice = c.documents.get(restored, "people/alice")
    link = next(x for x in c.graph.links.outgoing_numbered(restored.id, alice.id) if x.kind == "works_at")
    c.graph.close(restored, link.id, "2026-11")
    before = snapshot(c, restored)

    report = stack.process().archive.import_("restored", older)

    assert report.errors == [] and report.written["link"] == 0 and len(report.kept) == 1
    assert snapshot(c, restored) == before
    ends = [
        x.valid_until for x in c.graph.links.outgoing_numbered(restored.id, alice.id) if x.kind == "works_at"
    ]
    assert ends == ["2026-11"]


def test_an_older_archive_never_puts_back_a_tag_removed_after_it(stack: Stack) -> None:
    c = stack.core
    filled = fill(c)
    older = exported(c, filled.brain)
    c.pages.tags(f"{filled.brain.slug}::people/alice", remove=["lab"])
    before = snapshot(c, filled.brain)

    report = stack.process().archive.import_(filled.brain.slug, older)

    assert report.errors == [] and report.written["document"] == 0
    assert [k.split(": ", 1)[1] for k in report.kept] == ["'people/alice'"]
    assert snapshot(c, filled.brain) == before


def test_a_thoughtmcp_memory_goes_as_its_row_stands(stack: Stack) -> None:
    c = stack.core
    brain, memory_id = recalled_thought(c)
    row = thought_row(c, brain, memory_id)

    report = stack.process().archive.import_("thoughts-copy", exported(c, brain))

    copy = c.brains.get("thoughts-copy")
    copied = [d for d in c.documents.repo.list(copy.id) if d.memory is not None and d.memory.user_id]
    assert report.errors == [] and len(copied) == 1
    assert thought_row(c, copy, copied[0].id) == row


def test_a_document_whose_id_is_not_an_id_is_refused_and_changes_nothing(stack: Stack) -> None:
    c = stack.core
    records = [
        {**r, "id": "../../x"} if r.get("path") == "notes/plain.md" else r for r in exported(c, fill(c).brain)
    ]

    report = stack.process().archive.import_("restored", records)

    restored = c.brains.get("restored")
    assert len(report.errors) == 1 and "document id '../../x' is not an id" in report.errors[0]
    assert "notes/plain.md" not in {d.path for d in c.documents.repo.list(restored.id)}
    assert c.documents.repo.stored_by_id("../../x") is None
