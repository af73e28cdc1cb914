"""Brains, document records and index intents (services/repositories.py,
services/documents/index_intents.py) on every record store.

A brain is kept twice, by id and under a slug pointer that carries a copy of it, both claimed in
one transaction and rewritten together only at the versions read. A document is kept at its path
and found by id through a pointer; commits apply atomically, each with an index intent per
document written that stays pending until finished at the version its commit wrote. This suite
pins the round trips, the conflicts, path order and pagination (for a reader who may not see
everything, too), moves, and that a commit to a brain being deleted leaves nothing behind.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cairn.auth import access
from cairn.auth.principal import READ, Principal, Via
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.models import Brain, Document, MemoryFacet, Visibility
from cairn.ports.records import RecordStore
from cairn.services.documents.index_intents import IndexIntents
from cairn.services.repositories import BrainRepository, DocumentRepository
from tests.fakes.clock import FakeClock
from tests.support.documents import a_document

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def a_brain(brain_id: str, slug: str, *, tenant: str = "acme", deleted: bool = False) -> Brain:
    return Brain(
        id=brain_id,
        slug=slug,
        name=slug.title(),
        visibility=Visibility.tenant,
        owner_tenant=tenant,
        embedding_model="test-embedder",
        embedding_dim=8,
        created_at=T0,
        updated_at=T0,
        deleted_at=T0 if deleted else None,
    )


def doc(doc_id: str, path: str, brain_id: str = "brn_1", *, owner: str | None = None) -> Document:
    made = a_document(doc_id, path, brain_id=brain_id, when=T0)
    return made.model_copy(update={"memory": MemoryFacet(user_id=owner)}) if owner else made


def create(repo: DocumentRepository, *docs: Document) -> list[Document]:
    """Commit new documents (record and id pointer each) in one transaction."""
    return repo.commit([op for d in docs for op in (repo.put_op(d, 0), repo.pointer_op(d))]).documents


# -- brains --------------------------------------------------------------------------------------


def test_a_brain_is_found_by_id_and_by_slug_and_a_taken_slug_or_id_claims_nothing(
    records: RecordStore,
) -> None:
    brains = BrainRepository(records)
    notes = brains.create(a_brain("brn_1", "notes"))
    assert brains.get("brn_1") == notes and brains.by_slug("notes", "acme") == notes
    assert brains.get("brn_none") is None and brains.by_slug("none", "acme") is None

    with pytest.raises(Conflict):  # the slug is taken: the new brain's record is not written either
        brains.create(a_brain("brn_2", "notes"))
    assert brains.get("brn_2") is None
    with pytest.raises(Conflict):  # the id is taken: the new slug is not claimed either
        brains.create(a_brain("brn_1", "other"))
    assert brains.by_slug("other", "acme") is None
    assert brains.get("brn_1") == notes and brains.by_slug("notes", "acme") == notes


def test_an_update_rewrites_the_brain_and_its_pointer_only_at_the_versions_read(records: RecordStore) -> None:
    brains = BrainRepository(records)
    brains.create(a_brain("brn_1", "notes"))

    public = brains.update("brn_1", lambda b: b.model_copy(update={"visibility": Visibility.public}))
    assert brains.get("brn_1") == public and brains.by_slug("notes", "acme") == public

    def meddled(b: Brain) -> Brain:  # another writer lands between this update's read and its write
        brains.update("brn_1", lambda other: other.model_copy(update={"name": "Theirs"}))
        return b.model_copy(update={"name": "Mine"})

    with pytest.raises(Conflict):
        brains.update("brn_1", meddled)
    theirs = brains.get("brn_1")
    assert theirs is not None and theirs.name == "Theirs" and brains.by_slug("notes", "acme") == theirs

    gone = brains.update("brn_1", lambda b: b.model_copy(update={"deleted_at": T0}), keep_slug=False)
    assert brains.get("brn_1") == gone and brains.by_slug("notes", "acme") == theirs  # the pointer left alone
    with pytest.raises(NotFound):
        brains.update("brn_none", lambda b: b)


def test_a_brain_keeps_its_slug_and_never_takes_another_brains(records: RecordStore) -> None:
    brains = BrainRepository(records)
    notes, other = brains.create(a_brain("brn_1", "notes")), brains.create(a_brain("brn_2", "other"))
    for slug in ("other", "free"):  # the pointer would go stale, or point at the wrong brain
        with pytest.raises(InvalidInput):
            brains.update("brn_1", lambda b, slug=slug: b.model_copy(update={"slug": slug}))
    assert brains.by_slug("notes", "acme") == notes and brains.by_slug("other", "acme") == other
    assert brains.by_slug("free", "acme") is None and brains.get("brn_1") == notes


def test_brains_page_in_id_order_and_slug_pointers_are_not_brains(records: RecordStore) -> None:
    brains = BrainRepository(records)
    for i in (3, 1, 5, 2, 4):
        brains.create(a_brain(f"brn_{i}", f"slug-{i}"))

    pages, after = [], None
    while True:
        page, after = brains.page(after=after, limit=2)
        pages.append([b.id for b in page])
        if after is None:
            break
    assert pages == [["brn_1", "brn_2"], ["brn_3", "brn_4"], ["brn_5"]]
    everything, last = brains.page(after=None, limit=5)  # a page that ends exactly at the end
    assert [b.slug for b in everything] == [f"slug-{i}" for i in range(1, 6)] and last is None
    assert brains.page(after="brn_5", limit=2) == ([], None)


# -- documents -----------------------------------------------------------------------------------


def test_committed_documents_read_back_by_path_by_id_and_in_batches(records: RecordStore) -> None:
    repo = DocumentRepository(records)
    a, b, c = create(
        repo, doc("doc_a", "notes/a.md"), doc("doc_b", "notes/b.md"), doc("doc_c", "notes/a.md", "brn_2")
    )
    assert a.version > 0 and a.model_copy(update={"version": 0}) == doc("doc_a", "notes/a.md")
    assert repo.get("brn_1", "notes/a.md") == a and repo.stored("brn_1", "notes/a.md") == a
    assert repo.get("brn_2", "notes/a.md") == c  # the same path in another brain is another record
    assert repo.get_by_id("doc_b") == b and repo.stored_by_id("doc_c") == c
    assert repo.get("brn_1", "notes/none.md") is None and repo.get_by_id("doc_none") is None

    assert repo.get_many([("brn_1", "notes/a.md"), ("brn_2", "notes/a.md"), ("brn_2", "notes/b.md")]) == {
        ("brn_1", "notes/a.md"): a,
        ("brn_2", "notes/a.md"): c,
    }
    assert repo.get_many_by_id(["doc_c", "doc_none", "doc_a", "doc_c"]) == {"doc_c": c, "doc_a": a}

    titled = a.model_copy(update={"title": "A"})
    (rewritten,) = repo.commit([repo.put_op(titled, a.version)]).documents
    assert rewritten.version > a.version and repo.get_by_id("doc_a") == rewritten
    with pytest.raises(Conflict):  # a writer that read `a` before that commit loses, and writes nothing
        repo.commit([repo.put_op(b.model_copy(update={"title": "B"}), b.version), repo.put_op(a, a.version)])
    assert repo.get("brn_1", "notes/b.md") == b and repo.get("brn_1", "notes/a.md") == rewritten


def test_an_id_whose_path_another_document_took_finds_nothing(records: RecordStore) -> None:
    repo = DocumentRepository(records)
    (old,) = create(repo, doc("doc_old", "notes/a.md"))
    (new,) = repo.commit(
        [
            repo.put_op(doc("doc_new", "notes/a.md"), old.version),
            repo.pointer_op(doc("doc_new", "notes/a.md")),
        ]
    ).documents
    assert repo.get_by_id("doc_new") == new and repo.get_many_by_id(["doc_new"]) == {"doc_new": new}
    assert repo.get_by_id("doc_old") is None and repo.stored_by_id("doc_old") is None
    assert repo.get_many_by_id(["doc_old", "doc_new"]) == {"doc_new": new}


def test_listing_and_paging_keep_path_order_under_a_prefix(records: RecordStore) -> None:
    repo = DocumentRepository(records)
    paths = [
        "notes/é.md",
        "notes/b/c.md",
        "notesx.md",
        "notes/b.md",
        "other/z.md",
        "notes/a.md",
        "notes/b-c.md",
    ]
    create(repo, *[doc(f"doc_{i}", path) for i, path in enumerate(paths)])
    create(repo, doc("doc_elsewhere", "notes/a0.md", "brn_2"))
    (deleted,) = repo.commit(
        [repo.put_op(doc("doc_gone", "notes/d.md").model_copy(update={"deleted_at": T0}), 0)]
    ).documents
    under = ["notes/a.md", "notes/b-c.md", "notes/b.md", "notes/b/c.md", "notes/d.md", "notes/é.md"]

    assert [d.path for d in repo.list("brn_1", "notes/")] == under  # bytewise: "-" < "." < "/" < "é"
    assert [i.sk for i in repo.raw("brn_1", "notes/b")] == [
        "doc#notes/b-c.md",
        "doc#notes/b.md",
        "doc#notes/b/c.md",
    ]
    assert len(list(repo.list("brn_1"))) == len(paths) + 1 and repo.get("brn_1", "notes/d.md") == deleted

    pages, after = [], None
    while True:
        page, after = repo.page("brn_1", "notes/", after=after, limit=2)
        pages.append([d.path for d in page])
        if after is None:
            break
    assert pages == [under[0:2], under[2:4], under[4:6]]
    assert repo.page("brn_1", "notes/", after=repo.past("notes/b"), limit=10)[0][0].path == "notes/d.md"
    rest, end = repo.page("brn_1", "", after=repo.past("notes/"), limit=10)
    assert [d.path for d in rest] == ["notesx.md", "other/z.md"] and end is None


def test_a_moved_document_leaves_no_record_behind_and_a_stale_move_changes_nothing(
    records: RecordStore,
) -> None:
    repo = DocumentRepository(records)
    (old,) = create(repo, doc("doc_1", "inbox/a.md"))
    moved = old.model_copy(update={"path": "archive/a.md"})

    with pytest.raises(Conflict):  # the move read a version that is no longer there
        stale = old.model_copy(update={"version": old.version + 1})
        repo.commit([repo.put_op(moved, 0), repo.pointer_op(moved), repo.remove_op(stale)])
    assert repo.get("brn_1", "archive/a.md") is None and repo.get_by_id("doc_1") == old

    (now,) = repo.commit([repo.put_op(moved, 0), repo.pointer_op(moved), repo.remove_op(old)]).documents
    assert repo.get("brn_1", "inbox/a.md") is None and [d.id for d in repo.list("brn_1")] == ["doc_1"]
    assert repo.get_by_id("doc_1") == now and now.path == "archive/a.md"

    # another document takes the path doc_1's pointer names: doc_1 reads as erased
    (taker,) = repo.commit([repo.put_op(doc("doc_2", "archive/a.md"), now.version)]).documents
    assert repo.stored_by_id("doc_1") is None and repo.stored("brn_1", "archive/a.md") == taker


def test_a_commit_to_a_brain_being_deleted_is_taken_back_whole(records: RecordStore) -> None:
    intents = IndexIntents(records)
    repo = DocumentRepository(records, intents)
    BrainRepository(records).create(a_brain("brn_1", "notes", deleted=True))
    BrainRepository(records).create(a_brain("brn_2", "live"))

    with pytest.raises(NotFound):
        create(repo, doc("doc_1", "a.md"), doc("doc_2", "a.md", "brn_2"))
    assert repo.stored("brn_1", "a.md") is None and repo.stored_by_id("doc_1") is None
    assert repo.stored("brn_2", "a.md") is None and repo.stored_by_id("doc_2") is None
    assert intents.get("doc_1") is None and intents.get("doc_2") is None and list(intents.pending()) == []


def test_a_reader_sees_only_what_it_may_and_its_pages_are_filled_from_what_follows(
    records: RecordStore,
) -> None:
    BrainRepository(records).create(a_brain("brn_1", "shared"))
    repo = DocumentRepository(records)
    owners = {"a": "bob", "b": None, "c": "bob", "d": "bob", "e": "alice", "f": "alice:agent", "g": "bob"}
    create(repo, *[doc(f"doc_{n}", f"m/{n}.md", owner=o) for n, o in owners.items()])

    with access.acting_as(Principal("acme", "alice", frozenset({READ}), Via.jwt)):
        first, after = repo.page("brn_1", "m/", after=None, limit=2)
        assert [d.path for d in first] == ["m/b.md", "m/e.md"] and after == "m/e.md"
        assert [d.path for d in repo.page("brn_1", "m/", after=after, limit=2)[0]] == ["m/f.md"]
        assert repo.page("brn_1", "m/", after=after, limit=2)[1] is None
        assert [d.id for d in repo.list("brn_1", "m/")] == ["doc_b", "doc_e", "doc_f"]
        assert repo.get("brn_1", "m/a.md") is None and repo.get_by_id("doc_c") is None
        assert repo.stored("brn_1", "m/a.md") is not None  # writers still find it, to refuse it
        assert set(repo.get_many_by_id(["doc_a", "doc_e", "doc_g"])) == {"doc_e"}
    assert len(list(repo.list("brn_1", "m/"))) == len(owners)  # the system sees everything


# -- index intents -------------------------------------------------------------------------------


def test_every_commit_leaves_an_intent_pending_until_finished_at_its_version(records: RecordStore) -> None:
    clock = FakeClock(start=T0)
    intents = IndexIntents(records, now=lambda: clock.now().timestamp())
    repo = DocumentRepository(records, intents)
    a, b = create(repo, doc("doc_a", "a.md"), doc("doc_b", "b.md"))
    clock.advance(120)
    later = repo.commit(
        [repo.put_op(a.model_copy(update={"title": "A"}), a.version)], touched=[("brn_1", "doc_x")]
    )
    first = intents.get("doc_b")
    assert (
        first is not None
        and first.brain_id == "brn_1"
        and first.at == (T0 + timedelta(milliseconds=1)).timestamp()
    )
    assert set(later.intents) == {"doc_a", "doc_x"} and later.intents["doc_a"] == intents.get("doc_a")
    assert sorted(i.doc_id for i in intents.pending()) == ["doc_a", "doc_b", "doc_x"]
    assert [i.doc_id for i in intents.pending(older_than_s=60)] == ["doc_b"]

    stale = next(i for i in intents.pending() if i.doc_id == "doc_b")
    assert intents.finish([]) == []
    (recommitted,) = repo.commit([repo.put_op(b, b.version)]).intents.values()  # rewrites doc_b's intent
    assert recommitted.version > stale.version
    # one moved intent does not keep the others of the same finish
    assert intents.finish([later.intents["doc_a"], stale, later.intents["doc_x"]]) == [stale]
    assert [i.doc_id for i in intents.pending()] == ["doc_b"]
    assert intents.finish([recommitted]) == [] and list(intents.pending()) == []
    assert intents.finish([recommitted]) == [recommitted]  # finished already
