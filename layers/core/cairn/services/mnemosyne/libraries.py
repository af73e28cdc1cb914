"""Libraries, collections and items: the library view of brains (Mnemosyne's surface).

- A **library** is a brain the caller may read. Its `library_type` (one of LIBRARY_TYPES),
  `description` and `workspace_id` are kept in the brain's metadata; a brain without a type is a
  `nonfiction` library (general prose). A library with no workspace is global.
- A **collection** is a first-class record of a library: uid, name (unique in its library,
  ignoring case), description, and the folder its items live under. Membership is where an item
  is stored, so a collection filter is a path-prefix filter inside every search leg.
- An **item** is a live document. Its `embedding_status` is `completed` once its chunks are live;
  an ingest still queued, running or failed has a pending record (item_status.py) that says so,
  and such an item's new chunks are staged, never searchable, until the ingest commits.

Collections are stored by collection_records.py.
"""

from __future__ import annotations

import bisect
import posixpath
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from cairn.auth import access
from cairn.auth.principal import ADMIN
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.libraries import DEFAULT_LIBRARY_TYPE, LIBRARY_TYPES, TYPE_KEY, library_type_of
from cairn.domain.models import Brain, Chunk, Document
from cairn.domain.paths import named_segment, normalize_user_path
from cairn.ports.chunks import ChunkIndex
from cairn.ports.clock import Clock
from cairn.services.brains import BrainService
from cairn.services.documents.chunk_ids import document_of_chunk
from cairn.services.documents.service import DocumentService
from cairn.services.events import ChangeEvent
from cairn.services.mnemosyne.collection_records import CollectionRecords, CollectionRow
from cairn.services.mnemosyne.item_status import COMPLETED, ItemStatusLog, PendingItem

DESCRIPTION_KEY: Final = "description"
WORKSPACE_KEY: Final = "workspace_id"
COLLECTIONS_FOLDER: Final = "collections"
LISTING_TTL_S: Final = 60.0  # a kept listing's age limit (the commit mark is what keeps it exact)
MAX_NAME: Final = 200
MAX_DESCRIPTION: Final = 2000
_FILE_TYPES: Final = {
    "text/markdown": "md", "text/plain": "txt", "application/json": "json", "text/html": "html",
    "application/pdf": "pdf", "image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp",
}  # fmt: skip


@dataclass(frozen=True)
class Library:
    brain: Brain

    @property
    def uid(self) -> str:
        return self.brain.id

    @property
    def name(self) -> str:
        return self.brain.name

    @property
    def library_type(self) -> str:
        return library_type_of(self.brain.metadata) or DEFAULT_LIBRARY_TYPE

    @property
    def description(self) -> str:
        text = self.brain.metadata.get(DESCRIPTION_KEY)
        return text if isinstance(text, str) else ""

    @property
    def workspace_id(self) -> str | None:
        workspace = self.brain.metadata.get(WORKSPACE_KEY)
        return workspace if isinstance(workspace, str) and workspace else None


@dataclass(frozen=True)
class Collection:
    uid: str
    library: Library
    name: str
    description: str
    folder: str
    created_at: datetime

    @property
    def prefix(self) -> str:
        return self.folder + "/"


@dataclass(frozen=True)
class LibraryItem:
    """An item as list_items shows it (a committed document, or an ingest not committed yet)."""

    uid: str
    library: Library
    path: str
    title: str
    item_type: str
    file_type: str
    chunk_count: int
    image_count: int
    embedding_status: str


@dataclass(frozen=True)
class FoundChunk:
    library: Library
    document: Document
    chunk: Chunk


class LibraryService:
    def __init__(
        self,
        brains: BrainService,
        documents: DocumentService,
        collection_records: CollectionRecords,
        chunks: ChunkIndex,
        status: ItemStatusLog,
        clock: Clock,
        *,
        commit_mark: Callable[[], int] | None = None,
    ) -> None:
        """`commit_mark`: the record store's CommitWatch (ports/records.py), where it has one (the
        embedded store); a library's listing is then kept between calls (see `_listing`)."""
        self.brains = brains
        self.documents = documents
        self.collection_records = collection_records
        self.chunks = chunks
        self.status = status
        self.clock = clock
        self._commit_mark = commit_mark
        # (brain, view) -> (commit mark read before the listing was, time.monotonic() then, listing)
        self.listings: dict[tuple[str, str | None], tuple[int, float, list[LibraryItem]]] | None = (
            {} if commit_mark is not None else None
        )
        self._generation: dict[str, int] = {}
        self._listing_lock = threading.Lock()

    # -- libraries -----------------------------------------------------------------------------

    def libraries(self, workspace_id: str | None = None) -> list[Library]:
        """The libraries the caller may read (in name, then uid order); with `workspace_id` only
        that workspace's."""
        return self._shelved(self.brains.list(), workspace_id)

    @staticmethod
    def _shelved(brains: list[Brain], workspace_id: str | None) -> list[Library]:
        found = [Library(b) for b in brains]
        if workspace_id is not None:
            found = [lib for lib in found if lib.workspace_id == workspace_id]
        return sorted(found, key=lambda lib: (lib.name.casefold(), lib.uid))

    def library(self, uid: str, workspace_id: str | None = None) -> Library:
        """One library the caller may read, by uid; NotFound for anything else (another tenant's
        library is not told apart from one that does not exist)."""
        for lib in self.libraries(workspace_id):
            if lib.uid == uid:
                return lib
        raise NotFound(f"library not found: {uid[:80]}")

    def scope(
        self,
        *,
        workspace_id: str | None = None,
        library_uid: str | None = None,
        library_type: str | None = None,
    ) -> list[Library]:
        """The libraries a call may touch: readable, in the workspace, the named one, of the type.
        Another tenant's public library only when named: a call that names none covers the
        caller's own tenant's, so no other tenant's text enters its answers unasked."""
        if library_type is not None and library_type not in LIBRARY_TYPES:
            raise InvalidInput(f"library_type must be one of: {', '.join(LIBRARY_TYPES)}")
        if library_uid is not None:
            found = [lib for lib in self.libraries(workspace_id) if lib.uid == library_uid]
        else:
            found = self._shelved(access.readable(self.brains.own()), workspace_id)
        if library_type is not None:
            found = [lib for lib in found if lib.library_type == library_type]
        return found

    def describe(
        self,
        ref: str,
        *,
        library_type: str | None = None,
        description: str | None = None,
        workspace_id: str | None = None,
    ) -> Library:
        """Set a brain's library type, description or workspace (brains:admin on it)."""
        if library_type is not None and library_type not in LIBRARY_TYPES:
            raise InvalidInput(f"library_type must be one of: {', '.join(LIBRARY_TYPES)}")
        if description is not None and len(description) > MAX_DESCRIPTION:
            raise InvalidInput(f"description must be at most {MAX_DESCRIPTION} characters")
        with access.needing(ADMIN):
            brain = self.brains.get(ref)
        wanted = {TYPE_KEY: library_type, DESCRIPTION_KEY: description, WORKSPACE_KEY: workspace_id}
        changes = {k: v for k, v in wanted.items() if v is not None}

        def change(stored: Brain) -> Brain:
            metadata = {**stored.metadata, **changes}
            if metadata.get(WORKSPACE_KEY) == "":
                metadata.pop(WORKSPACE_KEY)  # "" makes it global again
            return stored.model_copy(update={"metadata": metadata, "updated_at": self.clock.now()})

        for _ in range(5):
            try:
                return Library(self.brains.repo.update(brain.id, change))
            except Conflict:
                continue
        raise Conflict(f"brain {brain.slug} kept changing; try again")

    # -- collections ---------------------------------------------------------------------------

    def create_collection(
        self,
        library: Library,
        name: str,
        *,
        description: str = "",
        folder: str | None = None,
        shared_folder: bool = False,
    ) -> Collection:
        """A new collection of the library; its items live under `folder` (default
        `collections/<name as a path segment>`, with a digest of the name after it when the
        segment is not the name's own or another collection owns it). Conflict when the library
        has one of that name, or one owning the folder asked for (`shared_folder`: a restore
        bringing back two collections an earlier release gave one folder)."""
        name = " ".join(name.split()) if isinstance(name, str) else ""
        if not 1 <= len(name) <= MAX_NAME:
            raise InvalidInput(f"a collection name is 1..{MAX_NAME} characters")
        if len(description) > MAX_DESCRIPTION:
            raise InvalidInput(f"description must be at most {MAX_DESCRIPTION} characters")
        if self.collection_named(library, name) is not None:
            raise Conflict(f"library {library.name} already has a collection named {name!r}")
        chosen = normalize_user_path(folder or f"{COLLECTIONS_FOLDER}/{_segment(name)}").rstrip("/")
        if folder is None and self.collection_records.folder_owner(library.uid, chosen) is not None:
            chosen = f"{COLLECTIONS_FOLDER}/{_segment(name, digest=True)}"
        row = CollectionRow(new_id("col"), name, description, chosen, self.clock.now())
        try:
            self.collection_records.create(library.uid, row, shared_folder=shared_folder)
        except Conflict:
            if self.collection_named(library, name) is not None:
                raise Conflict(f"library {library.name} already has a collection named {name!r}") from None
            raise Conflict(
                f"folder {chosen}/ of library {library.name} belongs to another collection"
            ) from None
        return _collection(library, row)

    def collections(self, libraries: Sequence[Library]) -> list[Collection]:
        """The libraries' collections, by library name, then collection name."""
        found = [_collection(lib, row) for lib in libraries for row in self.collection_records.of(lib.uid)]
        return sorted(
            found, key=lambda c: (c.library.name.casefold(), c.library.uid, c.name.casefold(), c.uid)
        )

    def collection(self, uid: str, libraries: Sequence[Library]) -> Collection:
        """A collection of one of `libraries` by uid; NotFound otherwise."""
        holder = self.collection_records.library_of(uid)
        lib = next((lib for lib in libraries if holder is not None and lib.uid == holder), None)
        row = self.collection_records.get(lib.uid, uid) if lib is not None else None
        if lib is None or row is None:
            raise NotFound(f"collection not found: {uid[:80]}")
        return _collection(lib, row)

    def collection_named(self, library: Library, name: str) -> Collection | None:
        row = self.collection_records.named(library.uid, " ".join(name.split()))
        return _collection(library, row) if row is not None else None

    # -- items ---------------------------------------------------------------------------------

    def items(
        self, libraries: Sequence[Library], *, collection: Collection | None = None, limit: int, offset: int
    ) -> list[LibraryItem]:
        """Items in library order, then path order (pending ingests among them by their path),
        `offset` skipped, at most `limit`."""
        out: list[LibraryItem] = []
        skip = offset
        for lib in libraries:
            if collection is not None and collection.library.uid != lib.uid:
                continue
            prefix = collection.prefix if collection is not None else ""
            entries = self._library_items(lib, prefix)
            if skip >= len(entries):
                skip -= len(entries)
                continue
            out += entries[skip : skip + limit - len(out)]
            skip = 0
            if len(out) == limit:
                break
        return out

    def _library_items(self, lib: Library, prefix: str) -> list[LibraryItem]:
        pending = {p.document_id: p for p in self.status.pending(lib.uid) if p.path.startswith(prefix)}
        live = self._listing(lib)
        start = bisect.bisect_left(live, prefix, key=lambda e: e.path)
        entries: list[LibraryItem] = []
        for entry in live[start:]:
            if not entry.path.startswith(prefix):
                break
            waiting = pending.pop(entry.uid, None)
            entries.append(entry if waiting is None else replace(entry, embedding_status=waiting.status))
        paths = {e.path for e in entries}
        entries += [_pending_item(lib, p) for p in pending.values() if p.path not in paths]
        entries.sort(key=lambda e: e.path)
        return entries

    def _listing(self, lib: Library) -> list[LibraryItem]:
        """The library's live documents as items, in path order, read from the raw records (a
        listing decodes no Document model). Kept per brain where the store has a commit mark, and
        used only while the mark is the one read just before the listing was: another process's
        commit since (several may share the embedded store) has it read again. This process's own
        writes drop it through the brain's change events, and one landing while it is read keeps
        it from being kept."""
        key = (lib.uid, access.view_of(lib.brain))  # what the caller may see of it (auth/access.py)
        if self.listings is None or self._commit_mark is None:
            return self._read_listing(lib)
        mark = self._commit_mark()  # before the records: a commit while they are read leaves it stale
        with self._listing_lock:
            held = self.listings.get(key)
            generation = self._generation.get(lib.uid, 0)
        if held is not None and held[0] == mark and time.monotonic() - held[1] < LISTING_TTL_S:
            return held[2]
        started = time.monotonic()
        entries = self._read_listing(lib)
        with self._listing_lock:  # kept only when no write of this process landed while it was read
            if self._generation.get(lib.uid, 0) == generation:
                self.listings[key] = (mark, started, entries)
        return entries

    def _read_listing(self, lib: Library) -> list[LibraryItem]:
        rows = [_row_item(lib, item.data) for item in self.documents.repo.raw(lib.uid)]
        return [row for row in rows if row is not None]

    def forget_listing(self, brain_id: str, _events: Sequence[ChangeEvent] = ()) -> None:
        """A document of the brain changed (EventBus.listen): its kept listings are stale."""
        with self._listing_lock:
            if self.listings is not None:
                for key in [k for k in self.listings if k[0] == brain_id]:
                    del self.listings[key]
            self._generation[brain_id] = self._generation.get(brain_id, 0) + 1

    # -- chunks --------------------------------------------------------------------------------

    def get_chunk(self, chunk_uid: str, libraries: Sequence[Library]) -> FoundChunk:
        """A live chunk of a completed item in one of `libraries`; NotFound otherwise."""
        doc_id = document_of_chunk(chunk_uid) if isinstance(chunk_uid, str) else None
        doc = self.documents.repo.get_by_id(doc_id) if doc_id else None
        lib = next((lib for lib in libraries if doc is not None and lib.uid == doc.brain_id), None)
        chunk = self.chunks.get_chunk(lib.uid, chunk_uid) if lib is not None and doc is not None else None
        if lib is None or doc is None or doc.deleted_at is not None or chunk is None or not chunk.active:
            raise NotFound(f"chunk not found: {str(chunk_uid)[:80]}")
        return FoundChunk(lib, doc, chunk)


def item_type_of(doc: Document) -> str:
    """What kind of item a document is: a memory, an image, or a document."""
    return _item_type(doc.memory is not None, doc.metadata, doc.content_type)


def _item_type(is_memory: bool, metadata: Mapping[str, Any], content_type: str) -> str:
    if is_memory:
        return "memory"
    kind = metadata.get("item_type")
    if isinstance(kind, str) and kind:
        return kind
    return "image" if content_type.startswith("image/") else "document"


def _file_type(metadata: Mapping[str, Any], content_type: str, path: str) -> str:
    known = _FILE_TYPES.get(str(metadata.get("original_type") or content_type))
    if known:
        return known
    extension = posixpath.splitext(path)[1].lstrip(".").lower()
    return extension or "txt"


def _row_item(lib: Library, data: Mapping[str, Any]) -> LibraryItem | None:
    """A live document record's item, straight from its stored fields; None for a deleted one."""
    if data.get("deleted_at"):
        return None
    path, content_type = str(data["path"]), str(data.get("content_type") or "text/markdown")
    metadata = data.get("metadata") or {}
    images = metadata.get("image_count")
    return LibraryItem(
        uid=str(data["id"]),
        library=lib,
        path=path,
        title=str(data.get("title") or posixpath.basename(path)),
        item_type=_item_type(data.get("memory") is not None, metadata, content_type),
        file_type=_file_type(metadata, content_type, path),
        chunk_count=int(data.get("chunk_count") or 0),
        image_count=int(images) if isinstance(images, int | float) and not isinstance(images, bool) else 0,
        embedding_status=COMPLETED,
    )


def _pending_item(lib: Library, pending: PendingItem) -> LibraryItem:
    extension = posixpath.splitext(pending.path)[1].lstrip(".").lower()
    return LibraryItem(
        uid=pending.document_id,
        library=lib,
        path=pending.path,
        title=posixpath.basename(pending.path),
        item_type="image" if extension in ("png", "jpg", "jpeg", "webp") else "document",
        file_type=extension or "txt",
        chunk_count=0,
        image_count=0,
        embedding_status=pending.status,
    )


def _collection_order(c: Collection) -> tuple[str, str, str, str]:
    return (c.library.name.casefold(), c.library.uid, c.name.casefold(), c.uid)


def _segment(name: str, *, digest: bool = False) -> str:
    """A collection name as one path segment: a plain-ASCII name's slug (`Hydrex series` →
    `hydrex-series`); a name the slug loses letters of (`Café` → `caf`, `東京` → none), or one
    whose slug another collection's folder already is (`digest`), gets a digest of the name after
    it, so two names never share a folder."""
    segment = re.sub(r"[^a-z0-9._-]+", "-", name.casefold()).strip("-.")
    return named_segment(name, segment, fallback="collection", width=100, digest=digest)


def _collection(lib: Library, row: CollectionRow) -> Collection:
    return Collection(row.uid, lib, row.name, row.description, row.folder, row.created_at)
