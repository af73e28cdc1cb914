"""Domain models ↔ RecordStore items (single-table layout, documented in docs/ARCHITECTURE.md).

| record        | pk                  | sk                    |
|---------------|---------------------|-----------------------|
| brain         | `brains`            | `brain#<id>`          |
| brain by slug | `brains`            | `slug#<slug>#<tenant>` (services/brain_slugs.py) |
| brain pointers| `brains-of#<tenant>`, `brains-public` | `brain#<id>` (services/brain_pointers.py) |
| document      | `brain#<brain_id>`  | `doc#<path>`          |
| doc by id     | `docid#<doc_id>`    | `doc`                 |
| session       | `session#<id>`      | `session`             |
| message       | `session#<id>`      | `msg#<seq, 10 digits>`|
| index intent  | `reindex#<shard>`   | `<doc_id>`            |
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from cairn.auth import access
from cairn.domain.errors import Conflict, InvalidInput, NotFound, damaged_record, reading_record
from cairn.domain.models import Brain, Document, Message, Session
from cairn.ports.records import MAX_GET_MANY, MAX_SK_BYTES, Delete, Item, Put, RecordStore
from cairn.services.brain_pointers import pointer_keys, pointer_ops
from cairn.services.brain_slugs import (
    BRAINS_PK,
    brain_key,
    holders,
    legacy_slug_key,
    pointed,
    pointer_data,
    slug_key,
    slug_ops,
)
from cairn.services.documents.current_memories import CurrentMemories, entry_ops
from cairn.services.documents.index_intents import IndexIntents, Intent
from cairn.services.documents.memory_counts import MemoryCounts
from cairn.services.documents.old_bytes import OldBytesLog

M = TypeVar("M", bound=BaseModel)

_MEND_BATCH = 100  # brains whose pointers are read at once: at most three each, within MAX_GET_MANY


def _kept_keys(brain: Brain) -> set[tuple[str, str]]:
    """The pointers a brain has as it is, its slug's included: none once it is deleted."""
    keys = pointer_keys(brain)
    return keys | {slug_key(brain.slug, brain.owner_tenant)} if keys else keys


def doc_key(brain_id: str, path: str) -> tuple[str, str]:
    return documents_pk(brain_id), f"doc#{path}"


def doc_id_key(doc_id: str) -> tuple[str, str]:
    return f"docid#{doc_id}", "doc"


SESSIONS_PREFIX = "session#"
"""What every session's partition starts with (its record and its messages)."""

ITEMS_PER_PAGE = 1000
"""What all_items reads at once: a listing is no snapshot, a record moved between pages (a document
renamed) may be met twice or not at all."""


def session_key(session_id: str) -> tuple[str, str]:
    return f"{SESSIONS_PREFIX}{session_id}", "session"


def message_key(session_id: str, seq: int) -> tuple[str, str]:
    """Zero-padded so a prefix query on `msg#` lists a session's messages in append order."""
    return f"{SESSIONS_PREFIX}{session_id}", f"msg#{seq:010d}"


def to_item(pk: str, sk: str, model: BaseModel) -> Item:
    return Item(pk=pk, sk=sk, data=model.model_dump(mode="json"))


def from_item(model: type[M], item: Item) -> M:
    """The model an item holds; DamagedStore when it no longer holds one (changed by hand)."""
    try:
        return model.model_validate(item.data)
    except ValidationError as exc:
        raise damaged_record(
            item.pk, item.sk, f"it is not a {model.__name__}: {exc.error_count()} problems"
        ) from None


class BrainRepository:
    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self.changes = 0
        """Brains rewritten through this repository (made private, handed over, deleted): what
        keeps an access check that is read again only now and then exact for this process."""

    def create(self, brain: Brain) -> Brain:
        """Claim the slug in the brain's tenant and write the brain in one transaction; Conflict
        when the tenant has a brain at that slug.

        The slug pointer carries a copy of the brain (rewritten with it), so resolving a slug is
        one read: on DynamoDB, one GetItem instead of two on every request."""
        earlier = pointed(self.records, self.records.get(*legacy_slug_key(brain.slug)))
        if earlier is not None and earlier.owner_tenant == brain.owner_tenant:
            raise Conflict(f"brain slug {brain.slug!r} is taken")  # an earlier release's pointer holds it
        slug = Item(*slug_key(brain.slug, brain.owner_tenant), pointer_data(brain))
        made = [Put(to_item(*brain_key(brain.id), brain), 0), Put(slug, 0), *pointer_ops(None, brain)]
        try:
            self.records.transact(made)
        finally:  # made, or lost to a brain made meanwhile: the request's listings are out of date
            access.rewritten(brain.id)
        return brain

    def update(
        self,
        brain_id: str,
        change: Callable[[Brain], Brain],
        *,
        keep_slug: bool = True,
        repoint: bool = False,
    ) -> Brain:
        """Rewrite a brain and its slug pointer together, conditional on both versions; Conflict
        when a concurrent writer got there first (the caller reads again and retries), or when
        the brain moves to a tenant that has a brain at its slug. Without `keep_slug` the slug
        pointer is left alone (a deleted brain's slug is free for another). Its tenant and public
        pointers follow it (brain_pointers.py); with `repoint`, each is written again whether or
        not it was there (a store an earlier release wrote), and an earlier release's slug pointer
        becomes its tenant's (brain_slugs.py)."""
        item = self.records.get(*brain_key(brain_id))
        if item is None:
            raise NotFound(f"brain not found: {brain_id}")
        before = from_item(Brain, item)
        after = change(before)
        if after.id != before.id or (keep_slug and after.slug != before.slug):
            raise InvalidInput("a brain's id and slug never change")  # its pointer would go stale
        ops: list[Put | Delete] = [Put(to_item(*brain_key(after.id), after), expected_version=item.version)]
        ops += pointer_ops(before, after, every=repoint)
        if keep_slug:
            ops += slug_ops(self.records, before, after)
        self.records.transact(ops)
        self.changes += 1
        access.rewritten(after.id)
        return after

    def get(self, brain_id: str) -> Brain | None:
        item = self.records.get(*brain_key(brain_id))
        return from_item(Brain, item) if item else None

    def by_slug(self, slug: str, tenant: str) -> Brain | None:
        """The brain `tenant` has at `slug` (a deleted one too, until its slug is freed)."""
        return pointed(self.records, self.records.get(*slug_key(slug, tenant)))

    def holders(self, slug: str) -> builtins.list[Brain]:
        """Every tenant's brain at `slug`, by tenant (the operator's view; callers filter it)."""
        return holders(self.records, slug)

    def mend_pointers(self, *, after: str | None = None) -> builtins.list[Brain]:
        """Give each live brain (with an id above `after`, when given) the tenant, public and slug
        pointers it lacks (brain_pointers.py, brain_slugs.py): those of a store an earlier release
        wrote, and of a brain a process of that release wrote beside this one after the store was
        migrated. The brains mended."""
        mended: builtins.list[Brain] = []
        while True:
            batch, after = self.page(after=after, limit=_MEND_BATCH)
            wanted = {b.id: _kept_keys(b) for b in batch}  # none for a deleted brain
            keys = [key for keys in wanted.values() for key in keys]
            held = self.records.get_many(keys) if keys else {}
            for brain in batch:
                if not wanted[brain.id].issubset(held):
                    mended.append(self._repoint(brain))
            if after is None:
                return mended

    def _repoint(self, brain: Brain) -> Brain:
        for _ in range(5):
            try:
                return self.update(brain.id, lambda b: b, repoint=True)
            except Conflict:
                continue
        raise Conflict(f"brain {brain.slug} kept changing while its pointers were written; try again")

    def get_many(self, brain_ids: Sequence[str]) -> builtins.list[Brain]:
        """The brains of these ids that exist, in the order given (at most MAX_GET_MANY)."""
        found = self.records.get_many([brain_key(i) for i in brain_ids])
        return [from_item(Brain, found[k]) for k in map(brain_key, brain_ids) if k in found]

    def page(self, *, after: str | None, limit: int) -> tuple[builtins.list[Brain], str | None]:
        """Up to `limit` brains in id order after the id `after`; the id to resume after when more follow."""
        page = self.records.query(BRAINS_PK, "brain#", after=f"brain#{after}" if after else None, limit=limit)
        brains = [from_item(Brain, item) for item in page.items]
        return brains, brains[-1].id if page.next_after is not None else None


class StoredDocument(BaseModel):
    """A document together with the record version the next conditional write must expect."""

    document: Document
    version: int


class DocumentRepository:
    """Document records. Every read applies the access rule (auth/access.py) for the current
    principal: a document it may not see is absent, from a single read as from a listing, whose
    pages are filled from what follows rather than shrunk. Writers read through `stored`, which
    sees everything and refuses a document the principal may not change."""

    def __init__(self, records: RecordStore, intents: IndexIntents | None = None) -> None:
        self.records = records
        self.brains = BrainRepository(records)
        self.intents = intents or IndexIntents(records)
        self.old_bytes = OldBytesLog(records)
        self.current = CurrentMemories(records)
        self.counts = MemoryCounts(records, now=self.intents.now)  # the store's clock, as the intents'

    def _seen(self) -> Callable[[str, str | None], bool] | None:
        """The read rule for the current access as (brain id, owner) -> visible; None: the system."""
        current = access.current()
        if current is None:
            return None
        principal = current.principal

        def visible(brain_id: str, owner: str | None) -> bool:
            brain = access.remembered_brain(brain_id, self.brains.get)
            return brain is not None and access.may_see(principal, brain, owner)

        return visible

    def _visible(self, docs: Iterable[Document]) -> Iterator[Document]:
        seen = self._seen()
        return iter(docs) if seen is None else (d for d in docs if seen(d.brain_id, d.owner))

    def get(self, brain_id: str, path: str) -> Document | None:
        return self.seen(self.stored(brain_id, path))

    def seen(self, doc: Document | None) -> Document | None:
        """A record already read, as `get` would return it: None unless the principal may see it."""
        return next(self._visible([doc]), None) if doc is not None else None

    def stored(self, brain_id: str, path: str) -> Document | None:
        """The record at `path` whoever may see it: for writers, which check `may_change` on it."""
        item = self.records.get(*doc_key(brain_id, path))
        return document_of(item) if item else None

    def get_by_id(self, doc_id: str) -> Document | None:
        pointer = self.records.get(*doc_id_key(doc_id))
        if pointer is None:
            return None
        doc = self.get(pointer.data["brain_id"], pointer.data["path"])
        return doc if doc is not None and doc.id == doc_id else None  # its path may be another's now

    def holder_of(self, doc_id: str) -> tuple[str, str] | None:
        """(brain id, path) the id's pointer names, whoever may see it, even when the document there
        is deleted or is another's now: an id so named is not free to give a new document."""
        pointer = self.records.get(*doc_id_key(doc_id))
        return (str(pointer.data["brain_id"]), str(pointer.data["path"])) if pointer is not None else None

    def stored_by_id(self, doc_id: str) -> Document | None:
        """The record of the document with this id whoever may see it, soft-deleted or not; None
        once it is erased (a pointer left to a path another document took counts as erased)."""
        pointer = self.records.get(*doc_id_key(doc_id))
        if pointer is None:
            return None
        doc = self.stored(pointer.data["brain_id"], pointer.data["path"])
        return doc if doc is not None and doc.id == doc_id else None

    def get_many(self, locations: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Document]:
        """The documents found at these (brain id, path) locations; missing ones are absent."""
        wanted = {doc_key(brain_id, path): (brain_id, path) for brain_id, path in locations}
        items = get_all(self.records, builtins.list(wanted))
        found = {wanted[k]: document_of(item) for k, item in items.items()}
        seen = self._seen()
        return found if seen is None else {k: d for k, d in found.items() if seen(d.brain_id, d.owner)}

    def get_many_by_id(self, doc_ids: Iterable[str]) -> dict[str, Document]:
        """What `get_by_id` returns for each id, in two batch reads (pointers, then documents)."""
        ids = builtins.list(dict.fromkeys(doc_ids))
        pointers = get_all(self.records, [doc_id_key(doc_id) for doc_id in ids])
        located = {
            doc_id: (p.data["brain_id"], p.data["path"])
            for doc_id in ids
            if (p := pointers.get(doc_id_key(doc_id))) is not None
        }
        docs = self.get_many(located.values())
        return {
            doc_id: docs[loc] for doc_id, loc in located.items() if loc in docs and docs[loc].id == doc_id
        }

    def list(self, brain_id: str, prefix: str = "") -> Iterator[Document]:
        pk, sk_prefix = doc_key(brain_id, prefix)
        return self._visible(document_of(item) for item in all_items(self.records, pk, sk_prefix))

    def raw(self, brain_id: str, prefix: str = "", *, after: str | None = None) -> Iterator[Item]:
        """The document records (soft-deleted ones too) under `prefix` (after the path `after`),
        in path order, undecoded."""
        pk, sk_prefix = doc_key(brain_id, prefix)
        items = all_items(self.records, pk, sk_prefix, None if after is None else f"doc#{after}")
        seen = self._seen()
        return items if seen is None else (i for i in items if seen(brain_id, record_owner(i.data)))

    def raw_at(self, brain_id: str, paths: Iterable[str]) -> Iterator[Item]:
        """The document records at these paths (soft-deleted ones too), in the order asked,
        undecoded; a path with no record is passed over."""
        seen = self._seen()
        wanted = builtins.list(paths)
        for start in range(0, len(wanted), MAX_GET_MANY):
            keys = [doc_key(brain_id, path) for path in wanted[start : start + MAX_GET_MANY]]
            found = self.records.get_many(keys)
            items = (found[key] for key in keys if key in found)
            yield from items if seen is None else (i for i in items if seen(brain_id, record_owner(i.data)))

    def page(
        self, brain_id: str, prefix: str, *, after: str | None, limit: int
    ) -> tuple[builtins.list[Document], str | None]:
        """Up to `limit` records (soft-deleted ones too) whose path starts with `prefix`, in path
        order, after the path `after`; and the path to resume after when more follow. Records the
        caller may not see are passed over inside the read: a page is short only at the end."""
        pk, sk_prefix = doc_key(brain_id, prefix)
        seen = self._seen()
        cursor = f"doc#{after}" if after is not None else None
        if seen is None:
            page = self.records.query(pk, sk_prefix, after=cursor, limit=limit)
            everything = [document_of(item) for item in page.items]
            return everything, everything[-1].path if page.next_after is not None else None
        docs: builtins.list[Document] = []
        while True:  # one record past the page tells whether a visible one follows
            page = self.records.query(pk, sk_prefix, after=cursor, limit=limit + 1 - len(docs))
            got = [document_of(item) for item in page.items]
            docs += got if seen is None else [d for d in got if seen(d.brain_id, d.owner)]
            if len(docs) > limit:
                return docs[:limit], docs[limit - 1].path
            if page.next_after is None:
                return docs, None
            cursor = page.next_after

    @staticmethod
    def past(prefix: str) -> str:
        """A position to resume `page` after that sorts past every stored path starting with
        `prefix`: the prefix padded with U+10FFFF, the highest character, up to the sort-key bound
        (a path would have to fill the key with U+10FFFF to sort beyond it)."""
        room = MAX_SK_BYTES - len(f"doc#{prefix}".encode())
        return prefix + "\U0010ffff" * max(room // 4, 0)

    def put_op(self, doc: Document, expected_version: int | None) -> Put:
        return Put(to_item(*doc_key(doc.brain_id, doc.path), doc), expected_version=expected_version)

    def pointer_op(self, doc: Document, *, new: bool = False) -> Put:
        """The id's pointer to the document; `new`: the id is new to the store, so the pointer must
        not exist (an id another brain's document holds is never taken over)."""
        item = Item(*doc_id_key(doc.id), data={"brain_id": doc.brain_id, "path": doc.path})
        return Put(item, expected_version=0 if new else None)

    def remove_op(self, doc: Document) -> Delete:
        """Drop the record at the document's path (it moved); conditional on the version read."""
        return Delete(*doc_key(doc.brain_id, doc.path), expected_version=doc.version)

    def commit(self, ops: Sequence[Put | Delete], touched: Iterable[tuple[str, str]] = ()) -> Committed:
        """Apply ops atomically, with an index intent (services/documents/index_intents.py) for every
        document record they write and every (brain id, document id) in `touched` (documents
        whose chunks must change though no record of theirs is written: erased, overwritten).
        Returns the written documents with their new versions, and the intents.

        A write that lands once its brain is being deleted (it resolved the brain before) is taken
        back and refused: the deletion, which marks the brain before it lists what to purge, would
        otherwise miss it. A deleted brain's record stays as that mark (services/erasure/)."""
        refs = [
            (str(op.item.data["brain_id"]), str(op.item.data["id"]))
            for op in ops
            if isinstance(op, Put) and _is_document(op.item)
        ]
        entries = entry_ops(ops)  # services/documents/current_memories.py
        written = self.counts.transact([*ops, *entries, *self.intents.put_ops([*refs, *touched])])
        docs = [document_of(item) for item in written if _is_document(item)]
        for brain_id in {d.brain_id for d in docs}:
            brain = self.brains.get(brain_id)
            if brain is not None and brain.deleted_at is not None:
                for item in written:
                    self.records.delete(item.pk, item.sk)
                raise NotFound(f"brain not found: {brain_id} (deleted while this write was under way)")
        return Committed(docs, IndexIntents.written(written))


@dataclass(frozen=True)
class Committed:
    """What a document commit wrote: the documents, and an intent per document whose chunks must
    follow (by document id)."""

    documents: builtins.list[Document]
    intents: dict[str, Intent]


def _is_document(item: Item) -> bool:
    return item.pk.startswith("brain#") and item.sk.startswith("doc#")


def record_owner(data: dict[str, object]) -> str | None:
    """A raw document record's owner (Document.owner) without decoding the record."""
    memory = data.get("memory")
    owner = memory.get("user_id") if isinstance(memory, dict) else None
    return owner if isinstance(owner, str) else None


def document_of(item: Item) -> Document:
    # The record's version given to validation, not copied in after: a model copy cost as much
    # as the validation itself.
    return from_item(Document, Item(item.pk, item.sk, {**item.data, "version": item.version}, item.version))


def get_all(records: RecordStore, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
    """RecordStore.get_many over any number of keys, MAX_GET_MANY at a time."""
    found: dict[tuple[str, str], Item] = {}
    for start in range(0, len(keys), MAX_GET_MANY):
        found.update(records.get_many(keys[start : start + MAX_GET_MANY]))
    return found


def all_items(records: RecordStore, pk: str, prefix: str = "", after: str | None = None) -> Iterator[Item]:
    """Every item of the partition under `prefix` (after `after`), in sort-key order, a page at a time."""
    while True:
        page = records.query(pk, prefix, after=after, limit=ITEMS_PER_PAGE)
        yield from page.items
        if page.next_after is None:
            return
        after = page.next_after


def delete_partition(records: RecordStore, pk: str) -> int:
    """Remove every item of the partition; returns how many."""
    return sum(records.delete(item.pk, item.sk) for item in list(all_items(records, pk)))


class StoredSession(BaseModel):
    """A session, how many messages it holds, and the version the next conditional write expects."""

    session: Session
    message_count: int
    version: int


class SessionRepository:
    """A session item plus its messages in one partition; the message counter lives on the session
    item, so every append is one conditional transaction (no lost update, no duplicate sequence)."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def get(self, session_id: str) -> StoredSession | None:
        item = self.records.get(*session_key(session_id))
        if item is None:
            return None
        with reading_record(item.pk, item.sk, "session"):
            return StoredSession(
                session=Session.model_validate(item.data["session"]),
                message_count=int(item.data["message_count"]),
                version=item.version,
            )

    def create(self, session: Session) -> None:
        self.records.put(_session_item(session, 0), expected_version=0)

    def save(self, stored: StoredSession, session: Session) -> None:
        """Replace the session record; Conflict when someone wrote it since `stored` was read."""
        self.records.put(_session_item(session, stored.message_count), expected_version=stored.version)

    def append(self, stored: StoredSession, messages: list[Message]) -> None:
        """Number `messages` after the stored counter and write them with the new counter, atomically."""
        count = stored.message_count
        ops: list[Put | Delete] = [
            Put(_session_item(stored.session, count + len(messages)), expected_version=stored.version)
        ]
        for seq, message in enumerate(messages, start=count + 1):
            ops.append(Put(to_item(*message_key(message.session_id, seq), message), expected_version=0))
        self.records.transact(ops)

    def messages(self, session_id: str, after_seq: int = 0) -> Iterator[Message]:
        """The session's messages numbered after `after_seq` (all of them from 0), in order."""
        pk, after = message_key(session_id, after_seq)
        for item in all_items(self.records, pk, "msg#", after if after_seq > 0 else None):
            yield from_item(Message, item)

    def recent(self, session_id: str, limit: int) -> list[Message]:
        """The newest `limit` messages, newest first."""
        pk, _ = session_key(session_id)
        page = self.records.query(pk, "msg#", limit=limit, descending=True)
        return [from_item(Message, item) for item in page.items]


def _session_item(session: Session, message_count: int) -> Item:
    data = {"session": session.model_dump(mode="json"), "message_count": message_count}
    return Item(*session_key(session.id), data=data)


def documents_pk(brain_id: str) -> str:
    """The partition of a brain's documents (and its folders' recent siblings)."""
    return f"brain#{brain_id}"
