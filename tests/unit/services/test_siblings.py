from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document
from cairn.services.siblings import SiblingContext
from tests.fakes.records import MemoryRecordStore


def _doc(path: str) -> Document:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Document(
        id="doc_1",
        brain_id="b1",
        path=path,
        title="t",
        checksum_sha256="0" * 64,
        byte_size=1,
        blob_key="k",
        commit_sha="0" * 40,
        created_at=now,
        updated_at=now,
    )


def test_a_reply_is_found_by_the_words_of_the_turn_before_it(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "chat/1.md", b"Alice: how is the marathon training going?")
    docs.write(brain, "chat/2.md", b"Bob: great, my knees finally stopped hurting")
    docs.write(brain, "notes/x.md", b"unrelated note")
    reply = docs.get(brain, "chat/2.md")
    assert reply.context == "Alice: how is the marathon training going?"
    assert docs.get(brain, "chat/1.md").context is None
    assert docs.get(brain, "notes/x.md").context is None  # another folder has its own sibling
    hits = container.search.search(brain, "marathon training").hits
    assert {h.path for h in hits[:2]} == {"chat/1.md", "chat/2.md"}
    assert (
        next(h for h in hits if h.path == "chat/2.md").content
        == "Bob: great, my knees finally stopped hurting"
    )


def test_rewriting_a_document_keeps_its_context(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "chat/1.md", b"first")
    docs.write(brain, "chat/2.md", b"second")
    docs.write(brain, "chat/3.md", b"third")
    docs.write(brain, "chat/2.md", b"second, edited")
    assert docs.get(brain, "chat/2.md").context == "first"


def test_only_a_recent_sibling_gives_context() -> None:
    siblings = SiblingContext(MemoryRecordStore(), window_s=600)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    siblings.records.put(siblings.remember_op(_doc("a/1.md"), "one", start).item)
    assert siblings.context_for("b1", "a/2.md", start + timedelta(seconds=599)) == "one"
    assert siblings.context_for("b1", "a/2.md", start + timedelta(seconds=601)) is None
    assert siblings.context_for("b1", "a/1.md", start) is None  # never its own context
    assert SiblingContext(siblings.records, window_s=0).context_for("b1", "a/2.md", start) is None
