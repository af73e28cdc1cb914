from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document
from cairn.services.documents.inputs import BatchOp
from cairn.services.documents.siblings import SiblingContext, natural_key
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.records import MemoryRecordStore
from tests.support.documents import a_document

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _doc(path: str) -> Document:
    return a_document(f"doc_{path}", path, when=T0)


def _context(container: Container, brain: Brain, path: str) -> str:
    doc = container.documents.get(brain, path)
    return container.adapters.chunks.get_chunks(brain.id, doc.id)[0].context


def test_a_reply_is_found_by_the_words_of_the_turn_before_it(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "chat/1.md", b"Alice: how is the marathon training going?")
    docs.write(brain, "chat/2.md", b"Bob: great, my knees finally stopped hurting")
    docs.write(brain, "notes/x.md", b"unrelated note")
    assert _context(container, brain, "chat/2.md") == "Alice: how is the marathon training going?"
    assert _context(container, brain, "chat/1.md") == ""
    assert _context(container, brain, "notes/x.md") == ""  # another folder has its own siblings
    hits = container.search.search(brain, "marathon training").hits
    assert {h.path for h in hits[:2]} == {"chat/1.md", "chat/2.md"}
    reply = next(h for h in hits if h.path == "chat/2.md")
    assert reply.content == "Bob: great, my knees finally stopped hurting"


def test_out_of_order_arrivals_are_linked_in_natural_order(container: Container, brain: Brain) -> None:
    docs = container.documents
    for n in (1, 3, 10, 2, 9):
        docs.write(brain, f"chat/turn-{n}.md", f"words of turn {n}".encode())
    assert _context(container, brain, "chat/turn-2.md") == "words of turn 1"
    assert _context(container, brain, "chat/turn-3.md") == "words of turn 2"  # repointed
    assert _context(container, brain, "chat/turn-9.md") == "words of turn 3"
    assert _context(container, brain, "chat/turn-10.md") == "words of turn 9"  # repointed


def test_rewriting_or_renaming_a_document_keeps_its_context(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "chat/1.md", b"first")
    docs.write(brain, "chat/2.md", b"second")
    docs.write(brain, "chat/2.md", b"second, edited")
    assert _context(container, brain, "chat/2.md") == "first"
    docs.rename(brain, "chat/2.md", "chat/2b.md")
    assert _context(container, brain, "chat/2b.md") == "first"


def test_only_recent_siblings_give_context() -> None:
    siblings = SiblingContext(MemoryRecordStore(), window_s=600)
    first = siblings.link(_doc("a/1.md"), "one", T0)
    assert first.context is None and first.op is not None
    siblings.records.put(first.op.item)
    assert siblings.link(_doc("a/2.md"), "two", T0 + timedelta(seconds=599)).context == "one"
    assert siblings.link(_doc("a/2.md"), "two", T0 + timedelta(seconds=601)).context is None
    assert SiblingContext(siblings.records, window_s=0).link(_doc("a/2.md"), "two", T0).context is None


def test_natural_key_orders_ids_by_their_text() -> None:
    """An id's digit runs are not counts: ULID-like ids (domain/ids.py) sort by creation as text,
    which comparing `3` with `12` as numbers would scramble."""
    assert sorted(["mem_01jab3xy.md", "mem_01jab12x.md"], key=natural_key) == [
        "mem_01jab12x.md",
        "mem_01jab3xy.md",
    ]
    made = []
    for _ in range(200):
        made.append(f"memory/fact/{new_id('mem')}.md")
        time.sleep(0.0005)  # new milliseconds: the time part's digit runs change
    assert sorted(reversed(made), key=natural_key) == made


def test_natural_key_orders_numbers_as_numbers() -> None:
    paths = ["D1:10.md", "D1:9.md", "D2:1.md", "D1:1.md"]
    assert sorted(paths, key=natural_key) == ["D1:1.md", "D1:9.md", "D1:10.md", "D2:1.md"]
    sessions = ["D10:1.md", "D9:3.md", "turn-10.md", "turn-9.md", "2024-05-10.md", "2024-05-9.md"]
    assert sorted(sessions, key=natural_key) == [
        "2024-05-9.md",
        "2024-05-10.md",
        "D9:3.md",
        "D10:1.md",
        "turn-9.md",
        "turn-10.md",
    ]


def test_a_sibling_written_long_before_gives_no_context(tmp_path) -> None:  # type: ignore[no-untyped-def]

    clock = FakeClock()
    container = build_container(Settings(data_dir=tmp_path), fake_adapters(clock=clock))
    brain = container.brains.create("Log", slug="log")
    container.documents.write(brain, "log/1.md", b"monday entry")
    clock.advance(601)
    container.documents.write(brain, "log/2.md", b"tuesday entry")
    assert _context(container, brain, "log/2.md") == ""


def _erase(container: Container, brain: Brain, doomed: str, paths: list[str]) -> None:
    every = {p: container.documents.get(brain, p) for p in paths}
    others = [d for p, d in every.items() if p != doomed]
    container.erasure.eraser.erase(brain, [every[doomed]], others)


def test_an_erasure_clears_a_context_linked_when_ids_were_ordered_by_digit_runs(
    container: Container, brain: Brain
) -> None:
    """Before ids compared as text, `mem_01jab3xy` came before `mem_01jab12x` (3 < 12) and gave it
    its context; such a context is cleared too when its giver is erased, after the folder's ring
    of recent siblings has forgotten both."""
    docs = container.documents
    paths = ["memory/fact/mem_01jab12x.md", "memory/fact/mem_01jab3xy.md"]
    docs.write(brain, paths[0], b"The lab meets on Thursdays.")
    docs.write(brain, paths[1], b"the secret supplier is Nordic")
    fillers = [f"memory/fact/mem_02z{n}.md" for n in range(16)]
    for path in fillers:
        docs.write(brain, path, b"filler")
    later = docs.get(brain, paths[0])
    container.adapters.chunks.set_context(brain.id, later.id, "the secret supplier is Nordic")  # as then
    _erase(container, brain, paths[1], paths + fillers)
    assert _context(container, brain, paths[0]) == ""
    assert _context(container, brain, fillers[5]) == "filler"  # the others keep theirs


def test_a_deleted_documents_words_no_longer_find_its_sibling(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "notes/x1.md", b"The launch password is kumquatorange.")
    docs.write(brain, "notes/x2.md", b"Lunch was a sandwich.")
    docs.write(brain, "chat/1.md", b"Alice: the vault code is cassowary-9.")
    docs.write(brain, "chat/2.md", b"Bob: noted.")
    assert "kumquatorange" in _context(container, brain, "notes/x2.md")

    docs.delete(brain, "notes/x1.md")  # one at a time, and in a batch
    docs.batch(brain, [BatchOp(type="delete", path="chat/1.md")])

    assert _context(container, brain, "notes/x2.md") == "" and _context(container, brain, "chat/2.md") == ""
    for word in ("kumquatorange", "cassowary"):
        hits = container.search.search(brain, word).hits
        assert all(h.component_scores.get("bm25_rank") is None for h in hits), hits
