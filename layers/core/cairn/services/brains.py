"""Brains: create, list, and resolve a caller's brain reference (id or slug)."""

from __future__ import annotations

import builtins
import hashlib
import itertools
import re
import unicodedata
from collections.abc import Callable, Iterator

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, Principal
from cairn.domain.errors import Conflict, Forbidden, InvalidInput, NoBrain, NotFound
from cairn.domain.ids import first_id_since, new_id
from cairn.domain.models import Brain, MetadataValue, Visibility
from cairn.domain.text import check_shown, excerpt, is_blank
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_GET_MANY
from cairn.services import brain_pointers as pointers
from cairn.services.documents.listing import decode_cursor, encode_cursor
from cairn.services.repositories import BrainRepository

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
PRINCIPAL_NAME = re.compile(r"^[^\s\x00-\x1f\x7f]{1,128}$")
"""A tenant or owning subject: 1..128 characters, no spaces or control characters."""
BRAIN_ID_PREFIX = "brn"
MAX_SLUG = 64
MAX_NAME = 128
MAX_PAGE = 1000  # brains per page
READ_AHEAD = 100
FIRST_TRIES = 5  # per slug, while a Conflict leaves nothing there (a racing create that failed)
_CURSOR_ID = re.compile(r"^brn_[0-9A-Za-z_-]{1,64}$")


def _decode_cursor(cursor: str) -> str:
    brain_id = decode_cursor(cursor)
    if brain_id is None or not _CURSOR_ID.fullmatch(brain_id):
        raise InvalidInput("cursor is not one this listing handed out: start again without it")
    return brain_id


def is_slug(value: str) -> bool:
    return len(value) <= MAX_SLUG and SLUG_RE.fullmatch(value) is not None


def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[:MAX_SLUG].rstrip("-") or "brain"


class BrainService:
    def __init__(
        self,
        repo: BrainRepository,
        clock: Clock,
        *,
        embedding_model: str,
        embedding_dim: int,
        default_brain: str | None = None,
    ) -> None:
        self.repo = repo
        self.clock = clock
        self.embedding_model = embedding_model
        self.embedding_dim = embedding_dim
        self.default_brain = default_brain

    def create(
        self,
        name: str,
        slug: str | None = None,
        visibility: str | None = None,
        metadata: dict[str, MetadataValue] | None = None,
    ) -> Brain:
        name = name.strip() if isinstance(name, str) else ""
        if not 1 <= len(name) <= MAX_NAME:
            raise InvalidInput(f"name must be 1..{MAX_NAME} characters")
        # a name is shown in lists: no line breaks, escapes or direction overrides to forge entries
        check_shown("name", name)
        if is_blank(name):
            raise InvalidInput("name must show at least one visible character")
        if slug is not None and not is_slug(slug):
            raise InvalidInput(f"slug must match {SLUG_RE.pattern} and be 1..{MAX_SLUG} characters")
        try:
            vis = Visibility(visibility or Visibility.private)
        except ValueError:
            raise InvalidInput("visibility must be one of private, tenant, public") from None
        tenant, owner = access.creator()
        chosen = slug or self._free_slug(slugify(name), tenant)
        now = self.clock.now()
        brain = Brain(
            id=new_id(BRAIN_ID_PREFIX),
            slug=chosen,
            name=name,
            visibility=vis,
            owner_tenant=tenant,
            owner=owner,
            embedding_model=self.embedding_model,
            embedding_dim=self.embedding_dim,
            metadata=dict(metadata or {}),
            created_at=now,
            updated_at=now,
        )
        try:
            return self.repo.create(brain)
        except Conflict:
            raise Conflict(f"a brain with slug {chosen!r} already exists") from None

    def first(
        self,
        name: str,
        slug: str,
        *,
        visibility: str | None = None,
        metadata: dict[str, MetadataValue] | None = None,
        tenant_first: bool = False,
    ) -> Brain:
        """The brain a surface's first write makes when the caller has none, at a slug fixed for
        the caller, so that concurrent first writes make one brain and each loser takes the
        winner's (a free-slug suffix would make a second brain that the surface never reads).

        A slug its tenant holds for a brain the caller may not take (another owner's, one without
        `metadata`'s marks) moves it to `<slug>-<tenant>`, then to `<slug>-<hash>` of its tenant
        (and owner, for a private brain); each fixed, so racing writers meet there. `tenant_first`:
        a tenant other than the local one starts at `<slug>-<tenant>` (where releases that kept
        slugs global put its first brains)."""
        tenant, owner = access.creator()
        private = (visibility or Visibility.private.value) == Visibility.private.value
        holder = f"{tenant}\n{owner}" if private else tenant
        digest = hashlib.sha256(holder.encode()).hexdigest()[:16]
        tenant_slug = f"{slug}-{slugify(tenant)}"[:MAX_SLUG]
        named = (tenant_slug,) if tenant_first and tenant != access.LOCAL_TENANT else (slug, tenant_slug)
        for candidate in (*named, f"{slug[: MAX_SLUG - len(digest) - 1]}-{digest}"):
            brain = self._claim(name, candidate, visibility, metadata or {})
            if brain is not None:
                return brain
        raise Conflict(f"every slug the {name!r} brain may have is another brain's")

    def _claim(
        self, name: str, slug: str, visibility: str | None, marks: dict[str, MetadataValue]
    ) -> Brain | None:
        """A new brain at `slug`, or the one a concurrent first write made there; None when the
        brain there is one the caller may not take."""
        for _ in range(FIRST_TRIES):
            try:
                return self.create(name, slug=slug, visibility=visibility, metadata=marks)
            except Conflict:
                held = self.repo.by_slug(slug, access.tenant())
            if held is not None:
                return held if self._takes(held, marks) else None
        raise Conflict(f"brain slug {slug!r} stayed contended; try again")

    @staticmethod
    def _takes(brain: Brain, marks: dict[str, MetadataValue]) -> bool:
        """Whether a first write may take `brain`, made meanwhile, as the one it would have made."""
        return (
            brain.deleted_at is None
            and bool(access.defaults([brain]))
            and all(brain.metadata.get(k) == v for k, v in marks.items())
        )

    def update(
        self,
        ref: str,
        *,
        visibility: str | None = None,
        owner: str | None = None,
        tenant: str | None = None,
    ) -> Brain:
        """Change who a brain belongs to and who else may see it. The caller needs brains:admin on
        the brain (its owner, or its tenant's admins for a `tenant`/`public` brain); moving it to
        another tenant is for the operator only (no principal: the CLI)."""
        with access.needing(ADMIN):
            brain = access.check_govern(self.get(ref))
        if visibility is None and owner is None and tenant is None:
            operator = access.current() is None  # only the CLI may give a tenant
            raise InvalidInput(
                f"nothing to change: give visibility{', owner or tenant' if operator else ' or owner'}"
            )
        try:
            vis = Visibility(visibility) if visibility is not None else None
        except ValueError:
            raise InvalidInput("visibility must be one of private, tenant, public") from None
        for what, value in (("owner", owner), ("tenant", tenant)):
            if value is not None and not PRINCIPAL_NAME.fullmatch(value):
                raise InvalidInput(f"{what} must be 1..128 characters without spaces or control characters")
            if value is not None:
                check_shown(what, value)  # shown in listings, as a name is
        kind, _, name = (owner or "").partition(":")
        if kind in access.RESERVED_SUBJECTS and not name and owner != access.LOCAL_OWNER:
            # `key:` or `arn` is the namespace of API keys or AWS callers, not one of them: no one acts for
            # it; `local` is the machine owner's own subject
            raise InvalidInput(f"owner {owner!r} names no principal: give a subject such as key:<id>")
        if tenant is not None and access.current() is not None:
            raise Forbidden(
                "only the operator (`cairn brains update --tenant`) may move a brain to another tenant"
            )
        held = self.repo.by_slug(brain.slug, tenant) if tenant not in (None, brain.owner_tenant) else None
        if held is not None and held.id != brain.id:
            raise Conflict(f"tenant {tenant} already has a brain slugged {brain.slug}: nothing was changed")

        def change(stored: Brain) -> Brain:
            updates: dict[str, object] = {"updated_at": self.clock.now()}
            if vis is not None:
                updates["visibility"] = vis
            if owner is not None:
                updates["owner"] = owner
            if tenant is not None:
                updates["owner_tenant"] = tenant
            return stored.model_copy(update=updates)

        for _ in range(5):
            try:
                # its pointers written again too: the mend for a brain an older release wrote
                return self.repo.update(brain.id, change, repoint=True)
            except Conflict:
                continue
        raise Conflict(f"brain {brain.slug} kept changing while being updated; try again")

    def _free_slug(self, base: str, tenant: str) -> str:
        if self.repo.by_slug(base, tenant) is None:
            return base
        for n in range(2, 1000):
            candidate = f"{base[: MAX_SLUG - len(str(n)) - 1]}-{n}"
            if self.repo.by_slug(candidate, tenant) is None:
                return candidate
        raise Conflict(f"no free slug derived from {base!r}")

    def list(self) -> list[Brain]:
        """Every brain the caller may read (auth/access.py), oldest first (in id order: ids are
        time-ordered)."""
        brains: builtins.list[Brain] = []
        cursor: str | None = None
        while True:
            page, cursor = self.page(limit=MAX_PAGE, cursor=cursor)
            brains += page
            if cursor is None:
                return brains

    def page(self, *, limit: int, cursor: str | None = None) -> tuple[builtins.list[Brain], str | None]:
        """Up to `limit` of the brains `list` returns, after `cursor`; and the cursor of the next
        page, None when nothing follows. The cursor is the base64url of the last brain's id."""
        if isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
        after = _decode_cursor(cursor) if cursor is not None else None
        found: builtins.list[Brain] = []
        for batch in self._batches(after, public=True, ahead=limit + 1):
            # read ahead of what is missing: the access filter may drop much of a batch
            found += access.readable([b for b in batch if b.deleted_at is None])
            if len(found) > limit:
                return found[:limit], encode_cursor(found[limit - 1].id)
        return found, None

    def own(self, tenant: str | None = None) -> builtins.list[Brain]:
        """The live brains of `tenant` (the caller's own when None; every brain for the system),
        oldest first, whatever the caller may do with them: where a default is chosen from."""
        current = access.current()
        if tenant is None and current is not None:  # its key's brains, or its tenant's
            tenant, batches = current.principal.tenant, self._batches(None)
        else:
            batches = self._batches(None, tenant=tenant)
        brains = [b for batch in batches for b in batch if b.deleted_at is None]
        return [b for b in brains if tenant is None or b.owner_tenant == tenant]

    def mend_pointers(self, *, made_within_s: float | None = None) -> builtins.list[Brain]:
        """Give each live brain (made within the last `made_within_s` seconds, when given) the
        pointers it lacks, as the system (BrainRepository.mend_pointers): a brain that a process
        of an earlier release wrote beside this one, after this store's migration ran, has none,
        so no principal lists it or takes it as its default. Brain ids are in creation order, so
        the recent ones are one short read."""
        after = None if made_within_s is None else first_id_since(BRAIN_ID_PREFIX, made_within_s)
        return self.repo.mend_pointers(after=after)

    def _batches(
        self, after: str | None, *, public: bool = False, tenant: str | None = None, ahead: int = 0
    ) -> Iterator[builtins.list[Brain]]:
        """Brains after the id `after`, in id order, a batch at a time: for a principal those its
        tenant's and (with `public`) the public pointers name (brain_pointers.py), only the key's
        when its key names brains; for the system (or with `tenant`) of that tenant, or all of them."""
        size = min(max(ahead, READ_AHEAD), MAX_GET_MANY)
        current = access.current()
        if current is not None and tenant is None:
            p = current.principal
            if p.brains is not None:
                ids: Iterator[str] = iter(sorted(i for i in p.brains if after is None or i > after))
            else:
                streams = [pointers.ids_listed(self.repo.records, pointers.tenant_pk(p.tenant), after)]
                if public:
                    streams.append(pointers.ids_listed(self.repo.records, pointers.PUBLIC_PK, after))
                ids = pointers.merged(*streams)
        elif tenant is not None:
            ids = pointers.ids_listed(self.repo.records, pointers.tenant_pk(tenant), after)
        else:
            while True:
                batch, after = self.repo.page(after=after, limit=size)
                yield batch
                if after is None:
                    return
        while chunk := list(itertools.islice(ids, size)):
            yield self._brains_of(chunk)

    def _brains_of(self, ids: builtins.list[str]) -> builtins.list[Brain]:
        """The brains of these ids that exist, in the order given: as this request first read
        them (auth/access.py `remembered_brain`; one being deleted left out), the others read now.
        A job keeps no listing (it may run long): it reads every brain it lists as it is now."""
        current = access.current()
        known = current.brains if current is not None and current.listings is not None else {}
        missing = [i for i in ids if i not in known]
        read = {b.id: b for b in self.repo.get_many(missing)} if missing else {}
        access.remember(read.values())
        found = [known[i] if i in known else read.get(i) for i in ids]
        return [b for b in found if b is not None]

    def get(self, ref: str) -> Brain:
        """A brain by id or slug; NotFound otherwise (a brain being deleted too), Forbidden when
        the caller may read it but not use it as asked. A brain the caller may not even read is
        NotFound, in the same words as one that does not exist, so no answer tells another
        tenant's or owner's brain from none."""
        brain = self.find(ref)
        if brain is None:
            raise NotFound(f"brain not found: {excerpt(ref)}")
        return access.check_brain(brain)

    def find(self, ref: str) -> Brain | None:
        """The live brain `ref` names that the caller may read, or None. A slug names a brain of
        the caller's tenant first; else the one brain at that slug of another tenant the caller
        may read (another tenant's public brain; for the operator, any tenant's). When several
        tenants' brains fit, none is chosen: Forbidden asks for the id."""
        if ref.startswith("brn_"):
            brain = self.repo.get(ref)
            return brain if brain is not None and self._readable(brain) else None
        if not is_slug(ref):
            return None
        own = self.repo.by_slug(ref, access.tenant())
        if own is not None and self._readable(own):
            return own
        others = [b for b in self.repo.holders(ref) if b.id != getattr(own, "id", None) and self._readable(b)]
        if len(others) > 1:  # the store protocol: a tenant that cannot be resolved is 401 or 403, never 400
            raise Forbidden(
                f"slug {ref} names brains of {len(others)} tenants: name the brain by its id "
                "(listing the brains shows each one's)"
            )
        return others[0] if others else None

    @staticmethod
    def ref_of(brain: Brain) -> str:
        """How the caller names `brain`: its slug when it is of the caller's tenant, else its id.
        A slug names the caller's own brain first, so another tenant's brain is named by what
        always names it, however the caller's own brains change."""
        return brain.slug if brain.owner_tenant == access.tenant() else brain.id

    @staticmethod
    def _readable(brain: Brain) -> bool:
        return brain.deleted_at is None and not access.hidden(brain)

    @property
    def changes(self) -> int:
        """Brains this process rewrote (services/repositories.py BrainRepository.changes)."""
        return self.repo.changes

    def still_readable(self, brain_id: str, principal: Principal) -> bool:
        """Whether `principal` may read the brain as it is now (a stream opened earlier asks again
        before each frame: the brain may have been made private, handed over or deleted since)."""
        brain = self.repo.get(brain_id)
        return brain is not None and brain.deleted_at is None and access.may_see(principal, brain)

    def audit_visibility(self) -> Callable[[str | None], bool]:
        """Whether the caller may read audit entries about a brain id: those of a brain it may
        read, and, with no key brain list, its tenant's entries that name no brain. Each brain is
        looked up once however many entries name it."""
        seen: dict[str | None, bool] = {}

        def visible(brain_id: str | None) -> bool:
            if brain_id not in seen:
                seen[brain_id] = self._audit_visible(brain_id)
            return seen[brain_id]

        return visible

    def _audit_visible(self, brain_id: str | None) -> bool:
        if brain_id is None:
            return access.unlimited()
        brain = self.repo.get(brain_id)
        current = access.current()
        return brain is not None and (current is None or access.may(current.principal, brain, READ))

    def for_key(self, refs: builtins.list[str], tenant: str) -> builtins.list[str]:
        """The ids of the brains an API key of `tenant` is to be limited to, each resolved as the
        caller may see it (a slug as one of `tenant`'s); InvalidInput for one of another tenant (a
        key never reaches past its own)."""
        ids: builtins.list[str] = []
        for ref in refs:
            by_id = ref.startswith("brn_")
            brain = self.repo.get(ref) if by_id else self.repo.by_slug(ref, tenant) if is_slug(ref) else None
            if brain is None or not self._readable(brain):
                if by_id:
                    raise NotFound(f"brain not found: {excerpt(ref)}")
                raise NotFound(
                    f"tenant {excerpt(tenant)} has no brain {excerpt(ref)} (name another tenant's by its id)"
                )
            access.check_brain(brain)
            if brain.owner_tenant != tenant:
                raise InvalidInput(
                    f"brain {brain.slug} belongs to tenant {brain.owner_tenant}, not {tenant}: "
                    "a key may only be limited to brains of its own tenant"
                )
            ids.append(brain.id)
        return ids

    def resolve(self, ref: str | None) -> Brain:
        """The brain a tool call means: the given id/slug, else the default, else the first brain.
        An empty reference is refused rather than taken to mean the default (it is a caller's bug).
        Empty as Python's strip() reads it: a reference comes from Cairn's own callers (the
        canonical tools, the CLI, the web UI) or a surface's configured brain (Settings), never
        from a TypeScript surface's arguments, whose blank rule (domain/js_text.py) its own checks apply.
        A default (configured or first) is always one of the caller's own tenant that it may use
        for the operation at hand: never another tenant's public brain."""
        if ref is not None and not ref.strip():
            raise InvalidInput("brain must not be empty: give a brain id or slug, or leave it out")
        if ref:
            try:
                return self.get(ref)
            except NotFound:
                raise NoBrain(f"no brain matches {excerpt(ref)}") from None
        if self.default_brain:
            try:
                configured = self.get(self.default_brain)
            except (NotFound, Forbidden, InvalidInput):
                # gone (deleted by its owners), another tenant's or owner's, or only other tenants'
                # (several): each caller's own default then, so no tenant's deletion stops the
                # others and no answer tells which
                configured = None
            if configured is not None and access.defaults([configured]):
                return configured
        brains = access.defaults(self.own())
        if not brains:
            raise NoBrain(
                "no brain this caller may use exists yet: create one first (`cairn brains create NAME`, "
                "POST /v1/brains, or the memory_create_brain tool), or name one"
            )
        return brains[0]
