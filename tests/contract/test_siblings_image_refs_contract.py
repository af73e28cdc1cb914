"""Two records documents keep about each other, on every record store.

A folder's recent siblings (services/documents/siblings.py) are one ring item in the brain's
documents partition: `link` only proposes the ring's next state, which counts once written, repoints
a later sibling that an earlier arrival now precedes, remembers a bounded number of siblings, and
`forget` takes erased documents out of it (clearing the context they gave, deleting an emptied ring)
without losing a concurrent forget's change.

The image references documents make (services/mnemosyne/image_refs.py) are recorded by image and
by document: `replace` keeps both directions in step and says which images changed, an image lists
the documents that show it in path order, one brain's references are never another's, and every
write is conditional on the mark of whose they are, as read.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from cairn.domain.errors import Conflict
from cairn.domain.models import Document
from cairn.ports.records import RecordStore
from cairn.services.documents.siblings import SiblingContext
from cairn.services.mnemosyne.image_refs import Held, ImageRefs, image_refs_prefix
from cairn.services.repositories import documents_pk
from tests.support.documents import a_document

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def doc(path: str, brain_id: str = "brn_1") -> Document:
    return a_document(f"doc_{brain_id}_{path}", path, brain_id=brain_id, when=T0)


def write(
    records: RecordStore, siblings: SiblingContext, path: str, text: str, *, brain_id: str = "brn_1"
) -> str | None:
    """Link a new document the way a write does (the ring op committed with it); its context."""
    linked = siblings.link(doc(path, brain_id), text, T0)
    assert linked.op is not None
    records.transact([linked.op])
    return linked.context


def ring(records: RecordStore, brain_id: str, folder: str) -> list[str] | None:
    item = records.get(documents_pk(brain_id), f"siblings#{folder}/")
    return None if item is None else [e["path"] for e in item.data["entries"]]


# -- SiblingContext ----------------------------------------------------------------------------


def test_a_link_counts_only_once_its_op_is_written_and_is_read_back_per_folder_and_brain(
    records: RecordStore,
) -> None:
    siblings = SiblingContext(records, window_s=600, excerpt_chars=12)
    first = siblings.link(doc("chat/1.md"), "how   is the\nrunning going?", T0)
    assert first.context is None and first.fixups == {} and first.op is not None
    # not yet written: the next sibling finds no predecessor, and the first has no context to tell
    assert siblings.link(doc("chat/2.md"), "great", T0).context is None
    assert siblings.context_of(doc("chat/1.md")) is None

    records.put(first.op.item, first.op.expected_version)
    assert siblings.context_of(doc("chat/1.md")) == ""  # in the ring, with no predecessor
    assert write(records, siblings, "chat/2.md", "great, thanks") == "how is the r"  # spaces folded, cut
    assert siblings.context_of(doc("chat/2.md")) == "how is the r"

    assert write(records, siblings, "notes/1.md", "unrelated") is None  # another folder, another ring
    assert write(records, siblings, "chat/3.md", "x", brain_id="brn_2") is None  # another brain
    assert siblings.context_of(doc("chat/2.md", "brn_2")) is None
    assert siblings.context_of(a_document("doc_other", "chat/2.md", brain_id="brn_1")) is None  # id differs
    assert ring(records, "brn_1", "chat") == ["chat/1.md", "chat/2.md"]


def test_a_later_sibling_is_repointed_when_an_earlier_one_arrives_and_old_ones_leave_the_ring(
    records: RecordStore,
) -> None:
    siblings = SiblingContext(records, window_s=600, remembered=4)
    write(records, siblings, "chat/turn-1.md", "one")
    write(records, siblings, "chat/turn-10.md", "ten")
    linked = siblings.link(doc("chat/turn-2.md"), "two", T0)  # lands between 1 and 10
    assert linked.context == "one" and linked.fixups == {doc("chat/turn-10.md").id: "two"}
    assert siblings.context_of(doc("chat/turn-10.md")) == "one"  # until the op is written
    assert linked.op is not None
    records.transact([linked.op])
    assert siblings.context_of(doc("chat/turn-10.md")) == "two"

    write(records, siblings, "chat/turn-3.md", "three")
    write(records, siblings, "chat/turn-4.md", "four")  # a fifth: turn-1 leaves the ring of four
    assert ring(records, "brn_1", "chat") == [f"chat/turn-{n}.md" for n in (10, 2, 3, 4)]
    assert siblings.context_of(doc("chat/turn-1.md")) is None
    assert siblings.context_of(doc("chat/turn-2.md")) is None  # its predecessor left: the ring cannot tell
    assert siblings.context_of(doc("chat/turn-4.md")) == "three"
    # a sibling written outside the window is not a predecessor
    late = siblings.link(doc("chat/turn-5.md"), "five", T0 + timedelta(seconds=601))
    assert late.context is None


def test_forgetting_clears_the_context_forgotten_siblings_gave_and_deletes_an_empty_ring(
    records: RecordStore,
) -> None:
    siblings = SiblingContext(records, window_s=600)
    for n in (1, 2, 3, 4):
        write(records, siblings, f"chat/{n}.md", f"turn {n}")
    write(records, siblings, "notes/a.md", "a")
    write(records, siblings, "chat/1.md", "other brain", brain_id="brn_2")

    cleared = siblings.forget("brn_1", {"chat/2.md", "chat/3.md", "notes/a.md", "gone/x.md"})
    assert cleared == {doc("chat/4.md").id}  # 3's context was 2, but 3 itself is forgotten
    assert ring(records, "brn_1", "chat") == ["chat/1.md", "chat/4.md"]
    assert siblings.context_of(doc("chat/4.md")) == ""  # no longer indexed with turn 3's words
    assert siblings.context_of(doc("chat/1.md")) == ""
    assert siblings.context_of(doc("chat/2.md")) is None
    assert ring(records, "brn_1", "notes") is None  # emptied: the ring item itself is gone
    assert records.query(documents_pk("brn_1"), "siblings#notes").items == []
    assert ring(records, "brn_2", "chat") == ["chat/1.md"]  # another brain's folder of the same name

    assert siblings.forget("brn_1", {"chat/2.md"}) == set()  # again: nothing left to clear
    assert siblings.forget("brn_1", {"chat/1.md", "chat/4.md"}) == set()
    assert ring(records, "brn_1", "chat") is None


def test_concurrent_forgets_in_one_folder_lose_neither_change(records: RecordStore) -> None:
    siblings = SiblingContext(records, window_s=600)
    paths = [f"log/{n}.md" for n in range(1, 9)]
    for path in paths:
        write(records, siblings, path, path)
    doomed = [{"log/2.md"}, {"log/4.md"}, {"log/6.md"}]  # each the predecessor of the next
    start = threading.Barrier(len(doomed))

    def forget(i: int) -> set[str]:
        start.wait()
        return siblings.forget("brn_1", doomed[i])

    with ThreadPoolExecutor(len(doomed)) as pool:
        results = [f.result() for f in [pool.submit(forget, i) for i in range(len(doomed))]]
    assert results == [{doc("log/3.md").id}, {doc("log/5.md").id}, {doc("log/7.md").id}]
    assert ring(records, "brn_1", "log") == ["log/1.md", "log/3.md", "log/5.md", "log/7.md", "log/8.md"]
    assert [siblings.context_of(doc(p)) for p in ("log/3.md", "log/5.md", "log/7.md", "log/8.md")] == [
        "", "", "", "log/7.md",
    ]  # fmt: skip


# -- ImageRefs ---------------------------------------------------------------------------------


def shown(alt: str | None, title: str | None = None, caption: str | None = None) -> dict[str, str | None]:
    return {"alt": alt, "title": title, "caption": caption}


def test_a_replace_is_read_back_both_ways_and_says_which_images_changed(records: RecordStore) -> None:
    refs = ImageRefs(records)
    assert refs.made_by("brn_1", "notes/a.md") == {} and refs.of_image("brn_1", "img/x.png") == []

    first = {"img/x.png": shown("a cat", caption="Tom\nthe cat"), "img/y.png": shown(None, "Ünïcode ✓")}
    assert refs.replace("brn_1", "notes/a.md", first) == {"img/x.png", "img/y.png"}
    assert refs.made_by("brn_1", "notes/a.md") == first  # None values round-trip as None
    assert refs.of_image("brn_1", "img/x.png") == [("notes/a.md", first["img/x.png"])]
    assert refs.of_image("brn_1", "img/y.png") == [("notes/a.md", first["img/y.png"])]
    assert refs.replace("brn_1", "notes/a.md", first) == set()  # the same again changes nothing

    second = {"img/x.png": shown("a cat", caption="Tom"), "img/y.png": first["img/y.png"]}
    second["img/z.png"] = shown("z")
    assert refs.replace("brn_1", "notes/a.md", second) == {"img/x.png", "img/z.png"}  # y kept as it was
    assert refs.made_by("brn_1", "notes/a.md") == second
    assert refs.of_image("brn_1", "img/x.png") == [("notes/a.md", second["img/x.png"])]

    third = {"img/z.png": shown("z")}
    assert refs.replace("brn_1", "notes/a.md", third) == {"img/x.png", "img/y.png"}  # dropped ones changed
    assert refs.made_by("brn_1", "notes/a.md") == third
    assert refs.of_image("brn_1", "img/x.png") == [] and refs.of_image("brn_1", "img/y.png") == []


def test_an_image_lists_the_documents_showing_it_in_path_order_per_brain(records: RecordStore) -> None:
    refs = ImageRefs(records)
    paths = ["notes/b.md", "Notes/a.md", "notes/é.md", "notes/z.md", "notes/10.md", "notes/9.md"]
    for path in paths:
        refs.replace("brn_1", path, {"img/x.png": shown(f"from {path}")})
    # a brain id that extends brn_1's: its partitions must not be brn_1's
    refs.replace("brn_10", "notes/a.md", {"img/x.png": shown("another brain")})
    refs.replace("brn_2", "notes/b.md", {"img/x.png": shown("brn_2")})

    listed = refs.of_image("brn_1", "img/x.png")
    assert [p for p, _ in listed] == sorted(paths, key=lambda p: p.encode())  # sort-key (bytewise) order
    assert all(data["alt"] == f"from {p}" for p, data in listed)
    assert refs.of_image("brn_10", "img/x.png") == [("notes/a.md", shown("another brain"))]
    assert refs.made_by("brn_2", "notes/a.md") == {}

    refs.replace("brn_1", "notes/b.md", {})  # a document that no longer shows it
    assert "notes/b.md" not in [p for p, _ in refs.of_image("brn_1", "img/x.png")]
    assert [p for p, _ in refs.of_image("brn_2", "img/x.png")] == ["notes/b.md"]


def test_a_replace_of_many_images_writes_every_one_and_an_empty_one_removes_every_record(
    records: RecordStore,
) -> None:
    refs = ImageRefs(records)
    many = {f"img/{n:02d}.png": shown(f"image {n}") for n in range(40)}  # 80 ops: two transactions
    assert refs.replace("brn_1", "notes/a.md", many) == set(many)
    assert refs.made_by("brn_1", "notes/a.md") == many
    assert all(refs.of_image("brn_1", image) == [("notes/a.md", data)] for image, data in many.items())
    refs.replace("brn_1", "notes/keep.md", {"img/00.png": shown("kept")})

    assert refs.replace("brn_1", "notes/a.md", {}) == set(many)
    assert refs.made_by("brn_1", "notes/a.md") == {}
    prefix = image_refs_prefix("brn_1")
    left, cursor = [], None
    while True:  # every record of the brain's references, in either direction
        page = records.scan([prefix], cursor=cursor)
        left += page.items
        if (cursor := page.cursor) is None:
            break
    assert sorted((i.pk.removeprefix(prefix), i.sk) for i in left) == [
        ("from#notes/keep.md", "img/00.png"), ("to#img/00.png", "notes/keep.md"),
    ]  # fmt: skip


def test_a_replace_is_marked_for_its_owner_and_refused_on_a_stale_read(records: RecordStore) -> None:
    """The mark beside a document's references names the version they were recorded for; a write
    from references read before another writer's is refused whole (Conflict) and writes nothing,
    and the last reference removed takes the mark."""
    refs = ImageRefs(records)
    many = {f"img/{n:02d}.png": shown(f"image {n}") for n in range(40)}  # two transactions
    assert refs.replace("brn_1", "notes/a.md", many, ("doc_a", 3)) == set(many)
    first = refs.held("brn_1", "notes/a.md")
    assert (first.shown, first.owner) == (many, ("doc_a", 3)) and first.mark > 0

    assert refs.replace("brn_1", "notes/a.md", many, ("doc_a", 4), first) == set()  # the mark alone moves
    second = refs.held("brn_1", "notes/a.md")
    assert (second.shown, second.owner) == (many, ("doc_a", 4)) and second.mark > first.mark

    late = {"img/99.png": shown("late")}
    for stale, owner in ((late, ("doc_a", 3)), (many, ("doc_a", 5)), ({}, None)):
        with pytest.raises(Conflict):
            refs.replace("brn_1", "notes/a.md", stale, owner, first)
        assert refs.held("brn_1", "notes/a.md") == second  # nothing written

    changed: set[str] = set()
    assert refs.replace("brn_1", "notes/a.md", {}, None, second, changed) == set(many) == changed
    assert refs.held("brn_1", "notes/a.md") == Held()
    assert records.scan([image_refs_prefix("brn_1")]).items == []  # no mark left either


def test_a_removal_of_unmarked_references_is_conditional_too(records: RecordStore) -> None:
    """References an earlier release recorded have no mark: their removal puts one first (failing
    if a writer marked them since it read) and deletes it with the last of them."""
    refs = ImageRefs(records)
    refs.replace("brn_1", "notes/a.md", {"img/x.png": shown("old")})  # None: recorded with no mark
    read = refs.held("brn_1", "notes/a.md")
    assert (read.owner, read.mark) == (None, 0) and read.shown == {"img/x.png": shown("old")}
    refs.replace("brn_1", "notes/a.md", {"img/x.png": shown("old")}, ("doc_a", 1), read)  # a writer since

    with pytest.raises(Conflict):
        refs.replace("brn_1", "notes/a.md", {}, None, read)
    assert refs.held("brn_1", "notes/a.md").owner == ("doc_a", 1)

    refs.replace("brn_1", "notes/a.md", {}, None)
    assert records.scan([image_refs_prefix("brn_1")]).items == []
