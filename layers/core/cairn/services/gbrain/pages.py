"""gbrain pages on Cairn documents (the text rules live in domain/pages.py).

- A page is a live document of the brain that is its collection, at its slug or, when another
  surface wrote it as Markdown, at its slug plus `.md` (page_paths.py: memories are never pages).
  So what memory_remember, the store protocol or an ingest writes is a page too, and a page is a
  document that every other surface reads and memory_search finds. The document's bytes are the
  text the caller put; the page (frontmatter, compiled truth, timeline, derived fields) is parsed
  from them on read.
- gbrain's `default` collection: the brain whose slug is `default`; when the caller has none, the
  write target, the brain the core resolves when none is given (the configured default brain, else
  the caller's oldest), whichever surface made it. Canonical slugs name that collection `default`,
  as gbrain's do, and every other collection by its brain's slug (`default::people/alice`,
  `work::people/alice`); a reference may use either name of the default collection.
- A page's version is its document's record version: 1 when created, +1 on every committed
  write, whatever wrote it (a put, a tag change through brain_tags, a store-protocol write or
  append). A put commits even identical content: every successful put is a new version. A page
  created where a deleted document lay continues that record's count; a page renamed through
  the store protocol starts again at the record its new path gets.
- Page tags are the document's tags (frontmatter lists are dropped by the format).
- Collection state and the mutation gates: collection_state.py.

Past 500 lines: PageService is gbrain's pages in one class (collections, slug resolution, get,
list, put, tags, each resolving its collection and gate the same way); paths, parsing, search and
collection state are already modules of their own.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from cairn.auth import access
from cairn.auth.principal import WRITE
from cairn.domain.errors import (
    CairnError,
    Conflict,
    Forbidden,
    InvalidInput,
    NoBrain,
    NotFound,
    VersionConflict,
)
from cairn.domain.models import Brain, Document
from cairn.domain.pages import (
    DEFAULT_COLLECTION,
    GENERAL_WING,
    MAX_CONTENT_BYTES,
    MAX_LIMIT,
    MAX_TAGS_PER_PAGE,
    AmbiguousSlug,
    PageText,
    SlugRef,
    page_room,
    page_summary,
    page_title,
    page_type,
    page_wing,
    parse_page,
    parse_slug_ref,
    qualified,
    render_page,
    split_qualified,
    timeline_entries,
    validate_tags,
)
from cairn.services.brains import BrainService
from cairn.services.brains import is_slug as is_brain_slug
from cairn.services.documents.document_text import MAX_TITLE
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.documents.service import DocumentService
from cairn.services.documents.unreadable import read_or_skip
from cairn.services.gbrain import collection_state as gates
from cairn.services.gbrain.collection_state import (
    NEEDS_FULL_SYNC_KEY,
    STATE_KEY,
    STATES,
    WRITABLE_KEY,
    CollectionState,
)
from cairn.services.gbrain.page_paths import page_slug, paths_of, pick, unshadowed

__all__ = [
    "NEEDS_FULL_SYNC_KEY",
    "STATES",
    "STATE_KEY",
    "WRITABLE_KEY",
    "CollectionState",
    "Page",
    "PageService",
    "PutOutcome",
]

TAG_RETRIES = 5


_GBRAIN_IDS = uuid.uuid5(uuid.NAMESPACE_URL, "urn:cairn:gbrain-page")

Namer = Callable[[Brain], str]
"""How gbrain calls a collection (PageService.namer)."""


@dataclass(frozen=True)
class Page:
    collection: str
    """The collection's name as gbrain shows it (`default` for the default collection)."""
    slug: str
    document: Document
    text: PageText

    @property
    def canonical(self) -> str:
        return qualified(self.collection, self.slug)

    @property
    def version(self) -> int:
        return self.document.version

    @property
    def gbrain_id(self) -> str:
        """A UUID that stays the page's through renames: derived from its document's id."""
        return str(uuid.uuid5(_GBRAIN_IDS, self.document.id))

    @property
    def title(self) -> str:
        return page_title(self.text, self.slug)

    @property
    def type(self) -> str:
        return page_type(self.text)

    @property
    def summary(self) -> str:
        return page_summary(self.text)

    @property
    def wing(self) -> str:
        return page_wing(self.slug)

    @property
    def room(self) -> str:
        return page_room(self.text)

    @property
    def tags(self) -> list[str]:
        return sorted(self.document.tags)

    def render(self) -> str:
        return render_page(self.text, canonical_slug=self.canonical, gbrain_id=self.gbrain_id)


T = TypeVar("T")


@dataclass(frozen=True)
class PutOutcome:
    page: Page
    created: bool


class PageService:
    def __init__(self, brains: BrainService, documents: DocumentService) -> None:
        self.brains = brains
        self.documents = documents

    # -- collections ----------------------------------------------------------------------------

    def first_collection(self, attempt: Callable[[], T]) -> T:
        """`attempt()`; when the caller has no collection at all, create `default` (gbrain always
        has one; one however many first writes race: BrainService.first) and try again."""
        try:
            return attempt()
        except NoBrain:
            self.brains.first(DEFAULT_COLLECTION, DEFAULT_COLLECTION)
            return attempt()

    def collections(self) -> list[Brain]:
        """The caller's collections: every brain it may read, oldest first."""
        return self.brains.list()

    def _own_collections(self) -> list[Brain]:
        """The caller's collections of its own tenant, oldest first (no other tenant's read)."""
        return access.readable(self.brains.own())

    def write_target(self) -> Brain:
        return self.brains.resolve(None)

    def default_collection(self) -> Brain | None:
        """The collection gbrain calls `default`; None when the caller has no brain."""
        try:
            return self._named(DEFAULT_COLLECTION)
        except (NoBrain, NotFound):
            return None

    def namer(self) -> Namer:
        """How gbrain calls each collection of this caller: `default` for the default collection,
        its brain's slug for any other (one lookup, for the operation at hand), its id for another
        brain slugged `default`, which `default` never names here, and for another tenant's brain
        (services/brains.py `ref_of`)."""
        default = self.default_collection()
        default_id = default.id if default is not None else None

        def name(brain: Brain) -> str:
            if brain.id == default_id:
                return DEFAULT_COLLECTION
            return brain.id if brain.slug == DEFAULT_COLLECTION else self.brains.ref_of(brain)

        return name

    def name_of(self, brain: Brain) -> str:
        return self.namer()(brain)

    def collection(self, name: str | None = None) -> Brain:
        """The collection a read tool means: the named one (NotFound when there is none), else
        the caller's only active collection, else the write target."""
        if name is not None:
            return self._named(name)
        active = [b for b in self.collections() if self.state(b).state == "active"]
        return active[0] if len(active) == 1 else self.write_target()

    def _named(self, name: str) -> Brain:
        """The collection `name` means. `default` is always one of the caller's own (the brain
        slugged `default` when it is one the caller may take as its default, else its default
        brain), the same for reads and writes: another tenant's public brain slugged `default` must
        not stand in for the caller's own."""
        by_id = name.startswith("brn_")  # how another brain slugged `default` is named (namer)
        try:
            brain = self.brains.get(name) if is_brain_slug(name) or by_id else None
        except NotFound:
            brain = None
        except Forbidden:
            held = self.brains.find(name)
            if name != DEFAULT_COLLECTION and held is not None and access.readable([held]):
                raise  # one the caller reads but may not change: gbrain's forbidden, not "not found"
            brain = None
        if name != DEFAULT_COLLECTION:
            if brain is None:
                raise NotFound(f"collection not found: {name}")
            return brain
        return brain if brain is not None and access.defaults([brain]) else self.write_target()

    @staticmethod
    def state(brain: Brain, name: str | None = None) -> CollectionState:
        return gates.state_of(brain, name)

    @staticmethod
    def writable(brain: Brain) -> bool:
        """Whether the caller may write pages of the collection: it is not read-only, and the
        caller holds the write scope and may change the brain (not another tenant's public one)."""
        current = access.current()
        allowed = current is None or (
            current.principal.has(WRITE) and access.may_change(current.principal, brain)
        )
        return gates.state_of(brain).writable and allowed

    def set_state(
        self,
        brain: Brain,
        *,
        state: str | None = None,
        needs_full_sync: bool | None = None,
        writable: bool | None = None,
    ) -> CollectionState:
        """Mark a collection restoring, needing a full sync, or read-only (and back)."""
        return gates.set_state(
            self.brains.repo, brain, state=state, needs_full_sync=needs_full_sync, writable=writable
        )

    def refuse_if_restoring(self, brain: Brain) -> None:
        gates.refuse_if_restoring(brain, self.name_of(brain))

    def guard_mutation(self, brain: Brain) -> None:
        """Every page mutation passes here once its collection is known: restoring or
        needs-full-sync first, then read-only."""
        gates.guard_mutation(brain, self.name_of(brain))

    def _gate_first(self, locate: Callable[[], Brain]) -> Brain | None:
        """The collection a mutation is aimed at, when the reference already names one, refused
        at once when it is restoring (before the caller's input is validated); None when the
        reference cannot be resolved yet (its own error comes in its turn)."""
        try:
            brain = locate()
        except CairnError:
            return None
        self.refuse_if_restoring(brain)
        return brain

    # -- resolution -------------------------------------------------------------------------------

    def resolve(self, text: str) -> tuple[Brain, str]:
        """The collection and slug a reference to an existing page means: `coll::slug` that
        collection; a bare slug the caller's only collection of its own tenant, else the one such
        collection holding it (NotFound: none; AmbiguousSlug: several)."""
        return self._resolve_read(parse_slug_ref(text))

    def _resolve_read(self, ref: SlugRef) -> tuple[Brain, str]:
        if ref.collection is not None:
            return self._named(ref.collection), ref.slug
        # a bare slug is looked for in the caller's own tenant's collections: another tenant's
        # public page is read when its collection is named, never in place of one of the caller's
        brains = self._own_collections()
        if not brains:
            raise NotFound(f"page not found: {ref.slug}")
        if len(brains) == 1:
            return brains[0], ref.slug
        owners = self._owners(brains, ref.slug)
        if not owners:
            raise NotFound(f"page not found: {ref.slug}")
        if len(owners) > 1:
            raise self._ambiguous(ref.slug, owners)
        return owners[0], ref.slug

    def _resolve_write(self, ref: SlugRef, expected_version: int | None) -> tuple[Brain, str]:
        """Creates go to the write target (AmbiguousSlug when another collection already holds the
        slug); updates to the one collection holding it (none: the write target, where the
        version check will find nothing)."""
        if ref.collection is not None:
            return self._named(ref.collection), ref.slug
        # only the caller's own collections it may write: another tenant's public brain holding
        # the slug neither takes the write nor makes the slug ambiguous
        brains = access.defaults(self._own_collections())
        if len(brains) <= 1:
            return (brains[0] if brains else self.write_target()), ref.slug
        owners = self._owners(brains, ref.slug)
        if expected_version is None:
            target = self.write_target()
            if any(b.id != target.id for b in owners):
                holders = {b.id: b for b in [*owners, target]}
                raise self._ambiguous(ref.slug, holders.values())
            return target, ref.slug
        if len(owners) > 1:
            raise self._ambiguous(ref.slug, owners)
        return (owners[0] if owners else self.write_target()), ref.slug

    def _ambiguous(self, slug: str, brains: Iterable[Brain]) -> AmbiguousSlug:
        name = self.namer()
        return AmbiguousSlug(slug, (qualified(name(b), slug) for b in brains))

    def _owners(self, brains: Sequence[Brain], slug: str) -> list[Brain]:
        found = self.documents.repo.get_many((b.id, path) for b in brains for path in paths_of(slug))
        return [b for b in brains if pick(slug, {p: found.get((b.id, p)) for p in paths_of(slug)})]

    def _document(self, brain: Brain, slug: str) -> Document | None:
        """The live document that is the page `slug` of the collection, if any."""
        found = self.documents.repo.get_many((brain.id, path) for path in paths_of(slug))
        return pick(slug, {path: found.get((brain.id, path)) for path in paths_of(slug)})

    # -- reads ------------------------------------------------------------------------------------

    def get(self, text: str) -> Page:
        return self.locate(text)[1]

    def locate(self, text: str) -> tuple[Brain, Page]:
        """The existing page a reference means, with its collection."""
        brain, slug = self.resolve(text)
        return brain, self._page(brain, slug, self.name_of(brain))

    def find(self, brain: Brain, slug: str, name: str) -> Page | None:
        """The page `slug` of the collection (gbrain calls it `name`), None when there is none."""
        doc = self._document(brain, slug)
        return self._from_document(name, slug, doc) if doc is not None else None

    def _page(self, brain: Brain, slug: str, name: str) -> Page:
        page = self.find(brain, slug, name)
        if page is None:
            raise NotFound(f"page not found: {qualified(name, slug)}")
        return page

    def _from_document(self, name: str, slug: str, doc: Document) -> Page:
        content = self.documents.content(doc).decode("utf-8", "replace")
        return Page(collection=name, slug=slug, document=doc, text=parse_page(content))

    def _readable(self, name: str, slug: str, doc: Document) -> Page | None:
        """The page, None when its stored bytes are damaged or it was erased meanwhile: a listing or
        search goes on without it (services/documents/unreadable.py; reading that page says why)."""
        return read_or_skip(doc, lambda d: self._from_document(name, slug, d))

    def list(
        self,
        collection: str | None = None,
        *,
        wing: str | None = None,
        page_type: str | None = None,
        limit: int = 50,
    ) -> builtins.list[Page]:
        """The collection's pages, newest update first, filtered by wing and type."""
        brain = self.collection(collection)
        name = self.name_of(brain)
        limit = min(max(limit, 0), MAX_LIMIT)
        prefix = f"{wing}/" if wing and wing != GENERAL_WING else ""
        found = unshadowed(self.documents.documents(brain, prefix))
        if wing:
            found = [(slug, d) for slug, d in found if page_wing(slug) == wing]
        found.sort(key=lambda item: item[0])
        found.sort(key=lambda item: item[1].updated_at, reverse=True)
        pages: builtins.list[Page] = []
        for slug, doc in found:
            if len(pages) >= limit:
                break
            page = self._readable(name, slug, doc)
            if page is not None and (page_type is None or page.type == page_type):
                pages.append(page)
        return pages

    def pages_of(self, brain: Brain, name: str | None = None) -> Iterator[Page]:
        """Every page of the collection, in path order."""
        name = self.name_of(brain) if name is None else name
        for slug, doc in unshadowed(self.documents.documents(brain)):
            if (page := self._readable(name, slug, doc)) is not None:
                yield page

    def page_count(self, brain: Brain) -> int:
        return len(unshadowed(self.documents.documents(brain)))

    def pages_by_id(self, brain: Brain, doc_ids: Iterable[str], name: str) -> dict[str, Page]:
        """The pages of the collection among `doc_ids` (two batch reads, and one more when a
        Markdown file's bare slug might shadow it), by document id."""
        docs = self.documents.repo.get_many_by_id(builtins.list(dict.fromkeys(doc_ids)))
        slugs = {
            doc_id: slug
            for doc_id, doc in docs.items()
            if doc.brain_id == brain.id and (slug := page_slug(doc)) is not None
        }
        shadowing = {slug for doc_id, slug in slugs.items() if docs[doc_id].path != slug}
        bare = self.documents.repo.get_many((brain.id, slug) for slug in shadowing) if shadowing else {}
        found = {
            doc_id: self._readable(name, slug, docs[doc_id])
            for doc_id, slug in slugs.items()
            if docs[doc_id].path == slug or pick(slug, {slug: bare.get((brain.id, slug))}) is None
        }
        return {doc_id: page for doc_id, page in found.items() if page is not None}

    def timeline(self, text: str, limit: int = 20) -> builtins.list[str]:
        return timeline_entries(self.get(text).text)[: min(max(limit, 0), MAX_LIMIT)]

    # -- writes -----------------------------------------------------------------------------------

    def put(self, text: str, content: str, expected_version: int | None = None) -> PutOutcome:
        """Create (no `expected_version`) or update (the page's current version) a page.

        Order: a restoring collection refuses first; then the slug, the content's size, the
        slug's resolution, the collection's gate, and the version check (VersionConflict with the
        version found). An existing page is written where it is stored (a Markdown note stays
        one); a new page at its slug."""
        raw = split_qualified(text)
        early = self._gate_first(lambda: self._resolve_write(raw, expected_version)[0])
        ref = parse_slug_ref(text)
        data = _encode(content)
        if len(data) > MAX_CONTENT_BYTES:
            raise InvalidInput(
                f"content too large: {len(data)} bytes exceeds maximum of {MAX_CONTENT_BYTES} bytes"
            )
        brain, slug = (early, ref.slug) if early is not None else self._resolve_write(ref, expected_version)
        self.guard_mutation(brain)
        parsed = parse_page(content)
        title = page_title(parsed, slug)[:MAX_TITLE]
        stored = self._document(brain, slug)

        def info(live: Document | None) -> DocumentInput:
            return replace(keep_info(live), title=title, content_type="text/markdown")

        try:
            outcome = self.documents.write_at_version(
                brain,
                stored.path if stored is not None else slug,
                data,
                info,
                expected_version=expected_version,
                reason="put",
            )
        except VersionConflict as exc:
            raise _put_conflict(exc) from None
        page = Page(collection=self.name_of(brain), slug=slug, document=outcome.document, text=parsed)
        return PutOutcome(page=page, created=outcome.created)

    def tags(self, text: str, add: Iterable[str] = (), remove: Iterable[str] = ()) -> builtins.list[str]:
        """The page's tags, sorted, after adding `add` and then removing `remove` (neither: a read).
        A change is a new page version."""
        add, remove = builtins.list(add), builtins.list(remove)
        if not add and not remove:
            return self.get(text).tags
        raw = split_qualified(text)
        early = self._gate_first(lambda: self._resolve_read(raw)[0])
        ref = parse_slug_ref(text)
        validate_tags(add)
        validate_tags(remove, removing=True)
        brain, slug = (early, ref.slug) if early is not None else self._resolve_read(ref)
        self.guard_mutation(brain)
        name = self.name_of(brain)
        for _ in range(TAG_RETRIES):
            page = self._page(brain, slug, name)
            wanted = sorted((set(page.document.tags) | set(add)) - set(remove))
            if wanted == page.tags:
                return wanted
            if len(wanted) > MAX_TAGS_PER_PAGE and len(wanted) > len(page.tags):  # growth only
                raise InvalidInput(f"too many tags: a page holds at most {MAX_TAGS_PER_PAGE}")
            doc = page.document
            try:
                self.documents.write_at_version(
                    brain,
                    doc.path,
                    self.documents.content(doc),
                    replace(keep_info(doc), tags=wanted),
                    expected_version=doc.version,
                    reason="tags",
                )
            except VersionConflict:
                continue
            return wanted
        raise Conflict(f"page {qualified(name, slug)} kept changing while its tags changed; try again")


def _encode(content: str) -> bytes:
    if not isinstance(content, str):
        raise InvalidInput("content must be a string")
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("content must be valid Unicode text (no unpaired surrogates)") from None


def _put_conflict(exc: VersionConflict) -> VersionConflict:
    """gbrain's words for the three ways a put misses its version."""
    current, expected = exc.current_version, exc.expected_version
    if expected is None:
        message = (
            f"conflict: page already exists (current version: {current}). Provide expected_version to update."
        )
    elif current is None:
        message = f"conflict: page does not exist at version {expected}"
    else:
        message = f"conflict: page updated elsewhere (current version: {current})"
    return VersionConflict(message, current_version=current, expected_version=expected)
