"""Everything a brain keeps, as one keyspace (services/erasure/keyspace.py) on every record store:
a purge removes every record under the brain's partitions and nothing of another brain; the
pointers outside its partitions go with it; deletes count only what was there, so a resumed purge
counts each record once."""

from __future__ import annotations

from datetime import UTC, datetime

from cairn.domain.ids import new_id
from cairn.domain.models import Session
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.brain_slugs import legacy_slug_key, slug_key
from cairn.services.erasure.keyspace import BrainKeyspace, brain_prefixes
from cairn.services.mnemosyne.collection_records import CollectionRecords, CollectionRow
from cairn.services.repositories import BrainRepository, DocumentRepository, SessionRepository
from tests.contract.test_brain_documents_contract import a_brain, create, doc

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def fill(records: RecordStore, brain_id: str) -> None:
    """A record in every family a brain keeps, its documents' id pointers and a collection."""
    for n, prefix in enumerate(brain_prefixes(brain_id)):
        records.put(Item(prefix, f"sk#{n}", {"n": n}))
    create(
        DocumentRepository(records),
        doc(f"doc_{brain_id}_a", "a.md", brain_id),
        doc(f"doc_{brain_id}_b", "b.md", brain_id),
    )
    row = CollectionRow(uid=f"col_{brain_id}", name="Inbox", description="", folder="inbox/", created_at=T0)
    CollectionRecords(records).create(brain_id, row)


def under(records: RecordStore, brain_id: str) -> list[Item]:
    found: list[Item] = []
    for prefix in brain_prefixes(brain_id):
        cursor: str | None = None
        while True:
            page = records.scan([prefix], cursor=cursor)
            found += page.items
            if page.cursor is None:
                break
            cursor = page.cursor
    return found


def test_a_purge_takes_every_family_of_the_brain_and_nothing_of_another(records: RecordStore) -> None:
    keyspace = BrainKeyspace(records)
    gone, kept = new_id("brn"), new_id("brn")  # brain ids have one length: none starts another
    for brain_id in (gone, kept):
        fill(records, brain_id)
    others = {(i.pk, i.sk) for i in under(records, kept)}
    assert len(others) >= len(brain_prefixes(kept)) + 2

    assert keyspace.drop_pointers(gone) == 2  # its two documents
    assert DocumentRepository(records).get_by_id(f"doc_{gone}_a") is None
    assert CollectionRecords(records).library_of(f"col_{gone}") is None
    assert keyspace.purge(gone) == len(others)  # the same records as the other brain holds
    assert under(records, gone) == []

    assert {(i.pk, i.sk) for i in under(records, kept)} == others
    assert DocumentRepository(records).get_by_id(f"doc_{kept}_a") is not None
    assert CollectionRecords(records).library_of(f"col_{kept}") == kept
    assert keyspace.purge(gone) == 0  # a resumed purge finds nothing more to count


def test_deletes_count_only_what_was_there_across_transactions(records: RecordStore) -> None:
    keyspace = BrainKeyspace(records)
    items = [Item("documents#brn_1", f"x#{n:03d}", {"n": n}) for n in range(130)]  # two transactions
    for item in items[:120]:
        records.put(item)
    assert keyspace.delete([*items, *items[:5]]) == 120  # repeats and absent ones count nothing
    assert records.query("documents#brn_1", "x#").items == []


def test_a_freed_slug_and_every_session_are_reachable_from_the_keyspace(records: RecordStore) -> None:
    keyspace = BrainKeyspace(records)
    brains = BrainRepository(records)
    notes = brains.create(a_brain("brn_1", "notes"))
    theirs = brains.create(a_brain("brn_9", "notes", tenant="beta"))  # another tenant's, same slug
    sessions = SessionRepository(records)
    for session_id, brain_id in (("ses_1", "brn_1"), ("ses_2", "brn_2")):
        sessions.create(Session(id=session_id, brain_id=brain_id, created_at=T0))
    assert sorted(i.pk for i in keyspace.sessions()) == ["session#ses_1", "session#ses_2"]

    keyspace.free_slug(notes)
    assert brains.by_slug("notes", "acme") is None and brains.get("brn_1") is not None
    assert brains.by_slug("notes", "beta") == theirs  # only its own tenant's pointer goes
    brains.create(a_brain("brn_3", "notes"))  # the slug is free for another brain
    keyspace.free_slug(notes)  # a deletion resumed later leaves the new holder's alone
    held = brains.by_slug("notes", "acme")
    assert held is not None and held.id == "brn_3"


def test_a_freed_slug_of_an_earlier_release_is_freed_too(records: RecordStore) -> None:
    brains = BrainRepository(records)
    notes = brains.create(a_brain("brn_1", "notes"))
    legacy = records.get(*slug_key("notes", "acme"))
    assert legacy is not None
    records.transact(
        [Delete(*slug_key("notes", "acme")), Put(Item(*legacy_slug_key("notes"), legacy.data), 0)]
    )

    BrainKeyspace(records).free_slug(notes)
    assert records.get(*legacy_slug_key("notes")) is None
    assert brains.create(a_brain("brn_2", "notes")).slug == "notes"  # the slug is free again
