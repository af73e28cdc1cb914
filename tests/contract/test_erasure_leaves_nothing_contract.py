"""An erasure removes everything and finishes, on every record store: the context a sibling took
from a document in a folder it has since left, the concept links of a document whose reach record
is damaged, and the receipt of an erasure resumed after the index was busy counts what its first
attempt removed (services/erasure/)."""

from __future__ import annotations

import pytest

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain, Document
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.ports.records import Item, RecordStore
from cairn.services.documents import siblings
from cairn.services.documents.inputs import BatchOp
from cairn.services.gbrain.page_assertions import assertions_pk
from cairn.services.mnemosyne.concept_reach import MAX_REACH, reach_key
from cairn.services.mnemosyne.concept_reach_sweep import done_key
from cairn.services.mnemosyne.item_status import PROCESSING, pending_pk
from cairn.services.repositories import doc_key, to_item
from cairn.services.search.access import access_pk
from tests.contract.test_concept_links_erased_contract import (
    PATH,
    strayed,
    text_of,
    words_kept,
    words_of,
    written,
)
from tests.fakes.clock import FakeClock
from tests.support.read_budget import read_budget

AGENT = "ada"
CODEWORD = "zephyrquill"


def shore(c: Container) -> Brain:
    with access.as_system():
        return c.brains.create("Shore", slug="shore")


def contexts_holding(c: Container, brain: Brain, word: str) -> list[str]:
    """The paths of the documents whose chunks are indexed with a context holding `word`."""
    found = []
    for doc in c.documents.repo.list(brain.id):
        chunks = c.adapters.chunks.get_chunks(brain.id, doc.id)
        if any(word in chunk.context.lower() for chunk in chunks):
            found.append(doc.path)
    return found


def found_by(c: Container, brain: Brain, word: str) -> list[str]:
    """The paths whose chunks the keyword leg finds for `word` (their context included)."""
    query = ChunkQuery(text=word, vector=None, filter=ChunkFilter(brain_ids=(brain.id,)))
    return sorted({hit.chunk.path for hit in c.adapters.chunks.search(query)})


def brain_records(c: Container, brain: Brain) -> list[Item]:
    """Every record of the brain's documents partition (rings and records of paths left included)."""
    items: list[Item] = []
    cursor: str | None = None
    while True:
        page = c.adapters.records.scan([f"brain#{brain.id}"], cursor=cursor)
        items += page.items
        if page.cursor is None:
            return items
        cursor = page.cursor


@pytest.mark.parametrize("how", ["rename", "batch", "rename-stopped"])
def test_a_sibling_context_taken_in_a_folder_the_document_left_goes_with_its_erasure(
    c: Container, clock: FakeClock, how: str
) -> None:
    """notes/2.md was indexed with an excerpt of notes/1.md; the ring of notes/ forgot them both
    (the window passed) before notes/1.md moved into the agent's scope, so the move could not
    clear that context, and the erasure of the scope must find it in notes/ itself. Or the move
    stopped after its commit, before the ring of notes/ forgot notes/1.md and its excerpt."""
    brain = shore(c)
    with access.as_system():
        c.documents.write(brain, "notes/1.md", f"The {CODEWORD} lantern sits by the harbour gate.".encode())
        lantern = c.documents.repo.stored(brain.id, "notes/1.md")
        assert lantern is not None
        c.documents.write(brain, "notes/2.md", b"It was lit at dusk by the keeper.")
        assert contexts_holding(c, brain, CODEWORD) == ["notes/2.md"]
        if how != "rename-stopped":
            clock.advance(3600)  # past the siblings' window: the next write drops both from the ring
        c.documents.write(brain, "notes/9.md", b"An unrelated note on tides.")
        target = f"memory/agent/{AGENT}/lantern.md"
        if how == "batch":
            c.documents.batch(brain, [BatchOp(type="rename", path="notes/1.md", to=target)])
        elif how == "rename":
            c.documents.rename(brain, "notes/1.md", target)
        else:
            with faults.armed("documents.indexed"), pytest.raises(faults.InjectedFault):
                c.documents.rename(brain, "notes/1.md", target)
        assert found_by(c, brain, CODEWORD) == [target, "notes/2.md"]  # notes/2.md by the excerpt
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.removed["documents"] == 1
    assert contexts_holding(c, brain, CODEWORD) == []
    assert found_by(c, brain, CODEWORD) == []
    # nor does any record name it: the rings, nor its record of the paths it left
    named = [
        i.sk for i in brain_records(c, brain) if lantern.id in repr(i) or CODEWORD in repr(i.data).lower()
    ]
    assert named == []


def test_the_record_of_the_paths_a_document_left_goes_with_an_erasure_once_the_document_is_gone(
    c: Container,
) -> None:
    """A document moved within the agent's scope, deleted, and a new one written where it was: its
    record of the paths it left names the scope, and no document holds it any more."""
    brain = shore(c)
    scope = f"memory/agent/{AGENT}"
    with access.as_system():
        c.documents.write(brain, f"{scope}/draft.md", b"A first draft.")
        c.documents.rename(brain, f"{scope}/draft.md", f"{scope}/final.md")
        c.documents.delete(brain, f"{scope}/final.md")
        c.documents.write(brain, f"{scope}/final.md", b"Another text, a document of its own.")
        assert [i.sk for i in brain_records(c, brain) if "draft" in repr(i.data)] != []
        c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert [i.sk for i in brain_records(c, brain) if scope in repr(i)] == []


def reach_not_mended(c: Container, upto: object) -> tuple[Brain, Document, RecordStore]:
    """A document of 10 linked chunks (3..9 also linked from an earlier version's), its concept
    reach record holding `upto`, on a brain the reach pass is done with (nothing mends it)."""
    brain = shore(c)
    records = c.adapters.records
    with access.as_system():
        doc = written(c, brain, 10)
        written(c, brain, 3, link=False, earlier=True)  # chunks 3..9 keep their links
        records.put(Item(*done_key(brain.id), {"at": c.adapters.clock.now().isoformat()}))
        records.put(Item(*reach_key(brain.id, doc.id), {"upto": upto}))
    return brain, doc, records


def test_a_damaged_reach_on_a_brain_the_pass_is_done_with_does_not_stop_the_erasure(
    c: Container, caplog: pytest.LogCaptureFixture
) -> None:
    """The pass will not mend the record (the brain is done): the erasure takes the links of every
    chunk of the document as its reach, says so in the log, and goes on."""
    brain, doc, records = reach_not_mended(c, "ten")  # damaged
    with access.as_system():
        assert words_kept(records) == words_of(range(10))
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.status == "completed" and receipt.removed["documents"] == 1
    assert receipt.removed["links"] >= 10
    assert words_kept(records) == set()  # the links of every ordinal, the earlier version's included
    assert records.get(*reach_key(brain.id, doc.id)) is None
    assert f"the concept reach of document {doc.id} is damaged" in caplog.text


ABSURD_UPTO = {"huge": 10**12, "negative": -5, "float": 2.5, "digits": "1000000000000"}


@pytest.mark.parametrize("upto", list(ABSURD_UPTO.values()), ids=list(ABSURD_UPTO))
def test_a_reach_changed_outside_cairn_to_an_absurd_count_is_taken_for_damaged_by_the_erasure(
    c: Container, monkeypatch: pytest.MonkeyPatch, upto: object
) -> None:
    """An `upto` no document's chunks can reach (past MAX_REACH) is damaged like one that is not a
    count: the erasure takes the widest reach from the links, and reads the store a bounded number
    of times where it queried each of 10**12 chunk ids."""
    brain, doc, records = reach_not_mended(c, upto)
    with access.as_system(), read_budget(monkeypatch, records, 2_000) as reads:
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.status == "completed" and receipt.removed["documents"] == 1
    assert receipt.removed["links"] >= 10
    assert words_kept(records) == set()  # the links of every ordinal, the earlier version's included
    assert records.get(*reach_key(brain.id, doc.id)) is None
    assert reads.count < 2_000


@pytest.mark.parametrize("ordinal", [10**12, MAX_REACH], ids=["huge", "just_past"])
def test_a_link_of_a_chunk_id_with_an_absurd_ordinal_is_removed_in_bounded_reads(
    c: Container, monkeypatch: pytest.MonkeyPatch, ordinal: int
) -> None:
    """A concept link whose chunk id was changed outside Cairn to an ordinal no document reaches
    (`chk_<doc>_999999999999`), of a document whose reach is damaged: the widest reach taken from
    the links was that ordinal, and the erasure queried each chunk id below it. The scan removes
    such a link where it finds it, and the reach is taken from the others."""
    brain, doc, records = reach_not_mended(c, "ten")  # damaged
    with access.as_system():
        strayed(c, brain, doc, ordinal)
        with read_budget(monkeypatch, records, 2_000) as reads:
            receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.status == "completed" and receipt.removed["links"] >= 11
    assert words_kept(records) == set()  # the stray link's concept names too
    assert records.scan([f"links#{brain.id}#out#", f"links#{brain.id}#in#"]).items == []
    assert reads.count < 2_000


@pytest.mark.parametrize("at", [1, 2], ids=["first", "second"])
def test_an_erasure_resumed_after_the_index_was_busy_counts_what_its_first_attempt_removed(
    c: Container, at: int
) -> None:
    """The index refuses the erase of the `at`-th document once its record is removed: the
    erasure stops there, and its resume finds that document (and any before it) gone."""
    brain = shore(c)

    def busy() -> None:
        raise Unavailable("the search index is held by another process")

    with access.as_system():
        c.documents.write(brain, PATH, text_of(4))
        c.documents.write(brain, f"memory/agent/{AGENT}/other.md", b"A second note of the agent.")
        with faults.armed("documents.indexed", at=at, action=busy), pytest.raises(Unavailable):
            c.erasure.erase("agent_scope", AGENT, [brain.slug])
        (receipt,) = c.erasure.resume()
    assert receipt.status == "completed"
    assert receipt.removed["documents"] == 2 and receipt.removed["chunks"] == 5
    assert c.documents.repo.stored(brain.id, PATH) is None


def test_the_bytes_of_a_document_at_the_brains_content_address_go_though_the_index_was_busy(
    c: Container,
) -> None:
    """A document written before each had a folder keeps its bytes at the brain's content address:
    they go before its record, so the index refusing after the commit cannot leave them behind."""
    brain = shore(c)
    blobs = c.adapters.blobs
    with access.as_system():
        doc = c.documents.write(brain, PATH, b"# Vault\n\nThe code is ochre-4417.").document
        shared = f"{brain.id}/{doc.checksum_sha256[:2]}/{doc.checksum_sha256}"
        blobs.put(shared, blobs.get(doc.blob_key))
        blobs.delete_prefix(f"{brain.id}/doc/{doc.id}/")
        legacy = doc.model_copy(update={"blob_key": shared})
        c.adapters.records.put(to_item(*doc_key(brain.id, PATH), legacy), doc.version)

        def busy() -> None:
            raise Unavailable("the search index is held by another process")

        with faults.armed("documents.indexed", action=busy), pytest.raises(Unavailable):
            c.erasure.erase("agent_scope", AGENT, [brain.slug])
        (receipt,) = c.erasure.resume()
    assert receipt.removed["documents"] == 1 and receipt.removed["blobs"] == 1
    assert not blobs.exists(shared)


@pytest.mark.parametrize("kept", ["folders", "stopped", "everywhere"])
def test_a_document_moved_more_often_than_its_record_keeps_paths_leaves_no_excerpt_where_it_first_was(
    c: Container, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, kept: str
) -> None:
    """notes/2.md took an excerpt of notes/1.md, which then moved LEFT_KEPT times more: its record
    keeps the folder of that first path, not the path. `stopped`: the first move stopped after its
    commit, so the ring of notes/ still holds its entry (with an excerpt of it). Or (its folders
    kept low) more folders than the record keeps: it says `everywhere`, and every document's
    context goes."""
    brain = shore(c)
    if kept == "everywhere":
        monkeypatch.setattr(siblings, "LEFT_KEPT", 2)
        monkeypatch.setattr(siblings, "FOLDERS_KEPT", 1)
    with access.as_system():
        c.documents.write(brain, "notes/1.md", f"The {CODEWORD} lantern sits by the harbour gate.".encode())
        c.documents.write(brain, "notes/2.md", b"It was lit at dusk by the keeper.")
        c.documents.write(brain, "other/1.md", b"The tide tables for the spring.")
        c.documents.write(brain, "other/2.md", b"Printed by the harbour office.")
        assert contexts_holding(c, brain, CODEWORD) == ["notes/2.md"]
        assert contexts_holding(c, brain, "tide") == ["other/2.md"]
        lantern = c.documents.repo.stored(brain.id, "notes/1.md")
        assert lantern is not None
        if kept != "stopped":
            clock.advance(3600)  # past the siblings' window: the next write drops both from the ring
        c.documents.write(brain, "notes/9.md", b"An unrelated note on tides.")
        path = "notes/1.md"
        for n in range(siblings.LEFT_KEPT + 1):
            if n == 0 and kept == "stopped":
                with faults.armed("documents.indexed"), pytest.raises(faults.InjectedFault):
                    c.documents.rename(brain, path, f"trail/{n}/lantern.md")
            else:
                c.documents.rename(brain, path, f"trail/{n}/lantern.md")
            path = f"trail/{n}/lantern.md"
        c.documents.rename(brain, path, f"memory/agent/{AGENT}/lantern.md")
        assert found_by(c, brain, CODEWORD) == [f"memory/agent/{AGENT}/lantern.md", "notes/2.md"]
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])
    assert receipt.removed["documents"] == 1
    assert contexts_holding(c, brain, CODEWORD) == []
    assert found_by(c, brain, CODEWORD) == []
    # a folder it never was in keeps its contexts, unless the record could no longer tell
    assert contexts_holding(c, brain, "tide") == ([] if kept == "everywhere" else ["other/2.md"])
    named = [
        i.sk for i in brain_records(c, brain) if lantern.id in repr(i) or CODEWORD in repr(i.data).lower()
    ]
    assert named == []  # nor does a ring of recent siblings, nor its record of where it was


@pytest.mark.parametrize("point", ["erasure.documents", "documents.committed"])
def test_an_erasure_killed_half_way_counts_what_the_killed_attempt_removed(
    c: Container, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """The process dies at the second document: after its erase finished, or right after its commit
    (nothing of the attempt's own failure handling runs, as under kill -9). The resume counts the
    three documents, their chunks and bytes: the attempt's counts rode its erase commits."""
    brain = shore(c)
    with access.as_system():
        for n in range(3):
            c.documents.write(brain, f"memory/agent/{AGENT}/{n}.md", f"Note {n} of the agent.".encode())
        monkeypatch.setattr(c.erasure, "_count_stopped", lambda *_: None)  # killed: nothing more runs
        with faults.armed(point, at=2), pytest.raises(faults.InjectedFault):
            c.erasure.erase("agent_scope", AGENT, [brain.slug])
        monkeypatch.undo()
        (receipt,) = c.erasure.resume()
    assert receipt.status == "completed"
    assert (receipt.removed["documents"], receipt.removed["chunks"], receipt.removed["blobs"]) == (3, 3, 3)
    assert c.adapters.records.query("erasure-progress", "").items == []  # dropped as the brain finished


def test_the_read_counts_claims_and_pending_items_of_the_erased_go_and_no_others(c: Container) -> None:
    """Each is read for the doomed documents at once, and only those held are deleted (a delete
    of every document's cost a request apiece): the doomed ones' go, another agent's stay."""
    brain = shore(c)
    with access.as_system():
        notes = [(f"memory/agent/{AGENT}/{n}.md", f"# Note {n}\n\nAda {n}.".encode()) for n in range(3)]
        ada = [c.documents.write(brain, path, text).document for path, text in notes]
        bo = c.documents.write(brain, "memory/agent/bo/0.md", b"# Note\n\nBo's.").document
    eraser = c.erasure.eraser
    eraser.access.saw(brain.id, [ada[0].id, bo.id])
    eraser.access.flush()
    for doc in (ada[1], bo):
        c.adapters.records.put(Item(assertions_pk(brain.id), doc.id, {"claims": []}))
    for doc in (ada[2], bo):
        eraser.status.mark(brain.id, doc.id, doc.path, PROCESSING, job_id="job_1")

    with access.as_system():
        receipt = c.erasure.erase("agent_scope", AGENT, [brain.slug])

    assert receipt.status == "completed" and receipt.removed["documents"] == 3
    held = {
        kind: {sk for pk, sk in keys if c.adapters.records.get(pk, sk) is not None}
        for kind, keys in {
            "access": [(access_pk(brain.id), d.id) for d in [*ada, bo]],
            "claims": [(assertions_pk(brain.id), d.id) for d in [*ada, bo]],
            "pending": [(pending_pk(brain.id), d.id) for d in [*ada, bo]],
        }.items()
    }
    assert held == {"access": {bo.id}, "claims": {bo.id}, "pending": {bo.id}}
