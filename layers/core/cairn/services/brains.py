"""Brains: create, list, and resolve a caller's brain reference (id or slug)."""

from __future__ import annotations

import re
import unicodedata

from cairn.auth import access
from cairn.domain.errors import Conflict, InvalidInput, NoBrain, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Visibility
from cairn.ports.clock import Clock
from cairn.services.repositories import BrainRepository

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_SLUG = 64
MAX_NAME = 128


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

    def create(self, name: str, slug: str | None = None, visibility: str | None = None) -> Brain:
        name = name.strip() if isinstance(name, str) else ""
        if not 1 <= len(name) <= MAX_NAME:
            raise InvalidInput(f"name must be 1..{MAX_NAME} characters")
        if slug is not None and (len(slug) > MAX_SLUG or not SLUG_RE.match(slug)):
            raise InvalidInput(f"slug must match {SLUG_RE.pattern} and be 1..{MAX_SLUG} characters")
        try:
            vis = Visibility(visibility or Visibility.private)
        except ValueError:
            raise InvalidInput("visibility must be one of private, tenant, public") from None
        tenant, owner = access.creator()
        chosen = slug or self._free_slug(slugify(name))
        now = self.clock.now()
        brain = Brain(
            id=new_id("brn"),
            slug=chosen,
            name=name,
            visibility=vis,
            owner_tenant=tenant,
            owner=owner,
            embedding_model=self.embedding_model,
            embedding_dim=self.embedding_dim,
            created_at=now,
            updated_at=now,
        )
        try:
            return self.repo.create(brain)
        except Conflict:
            raise Conflict(f"a brain with slug {chosen!r} already exists") from None

    def _free_slug(self, base: str) -> str:
        if self.repo.by_slug(base) is None:
            return base
        for n in range(2, 1000):
            candidate = f"{base[: MAX_SLUG - len(str(n)) - 1]}-{n}"
            if self.repo.by_slug(candidate) is None:
                return candidate
        raise Conflict(f"no free slug derived from {base!r}")

    def list(self) -> list[Brain]:
        """The brains the caller may read (auth/access.py), oldest first."""
        return access.readable(sorted(self.repo.list(), key=lambda b: (b.created_at, b.id)))

    def get(self, ref: str) -> Brain:
        """A brain by id or slug; NotFound otherwise, Forbidden when the caller may not use it."""
        brain = self.repo.get(ref) if ref.startswith("brn_") else None
        brain = brain or self.repo.by_slug(ref)
        if brain is None:
            raise NotFound(f"brain not found: {ref}")
        return access.check_brain(brain)

    def resolve(self, ref: str | None) -> Brain:
        """The brain a tool call means: the given id/slug, else the default, else the first brain."""
        wanted = ref or self.default_brain
        if wanted:
            try:
                return self.get(wanted)
            except NotFound:
                raise NoBrain(f"no brain matches {wanted!r}") from None
        brains = self.list()
        if not brains:
            raise NoBrain("no brain exists yet: create one with memory_create_brain")
        return brains[0]
