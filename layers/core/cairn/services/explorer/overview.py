"""Brains as the web UI lists them: the surfaces each serves, its owner, visibility and size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cairn.auth import access
from cairn.domain.libraries import DEFAULT_LIBRARY_TYPE, library_type_of
from cairn.domain.models import Brain
from cairn.ports.chunks import ChunkIndex
from cairn.services.documents.reads import DocumentReads
from cairn.services.repositories import DocumentRepository
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from cairn.services.thoughtmcp.models import FOLDER

USERS_SHOWN: Final = 100
COUNT_CAP: Final = 1000
"""Documents counted at most per brain (one bounded read); a larger brain shows as `1000+`."""


@dataclass(frozen=True)
class BrainSummary:
    brain: Brain
    serves: list[str]
    documents: int
    documents_capped: bool
    chunks: int

    @property
    def documents_label(self) -> str:
        return f"{COUNT_CAP}+" if self.documents_capped else str(self.documents)

    @property
    def chunks_label(self) -> str:
        return f"{self.chunks}+" if self.documents_capped and self.chunks_counted else str(self.chunks)

    chunks_counted: bool = False
    """Counted over the documents listed (the caller sees only some owners' items), not the index."""


def serves(brain: Brain, *, zengram_brain: str | None, thoughtmcp_brain: str | None) -> list[str]:
    """What each surface calls this brain: every brain is a Jeffs brain, a gbrain collection and a
    Mnemosyne library; one is zengram's and one holds ThoughtMCP's memories."""
    roles = [
        "Jeffs brain",
        "gbrain collection",
        f"Mnemosyne library ({library_type_of(brain.metadata) or DEFAULT_LIBRARY_TYPE})",
    ]
    if brain.id == zengram_brain:
        roles.append("zengram brain")
    if brain.id == thoughtmcp_brain or brain.metadata.get(BRAIN_MARK) is True:
        roles.append("ThoughtMCP memories")
    return roles


class BrainOverview:
    def __init__(self, repo: DocumentRepository, chunks: ChunkIndex) -> None:
        self.repo = repo
        self.chunks = chunks

    def summary(
        self, brain: Brain, *, zengram_brain: str | None, thoughtmcp_brain: str | None
    ) -> BrainSummary:
        docs, more = self.repo.page(brain.id, "", after=None, limit=COUNT_CAP)
        live = [d for d in docs if d.deleted_at is None]
        current = access.current()
        # The index counts every owner's chunks: a caller who sees only some owners' items gets
        # the chunks of those it was listed, never a count that moves with what it may not see.
        partial = current is not None and access.owner_view(current.principal, brain) != access.ALL_OWNERS
        return BrainSummary(
            brain=brain,
            serves=serves(brain, zengram_brain=zengram_brain, thoughtmcp_brain=thoughtmcp_brain),
            documents=len(live),
            documents_capped=more is not None,
            chunks=sum(d.chunk_count for d in live) if partial else self.chunks.count(brain.id),
            chunks_counted=partial,
        )


@dataclass(frozen=True)
class ThoughtUser:
    """A ThoughtMCP user whose memories the brain holds, and the folder they live under."""

    user_id: str
    prefix: str


def thought_users(documents: DocumentReads, brain: Brain) -> tuple[list[ThoughtUser], bool]:
    """The brain's ThoughtMCP users the caller may see (one folder each under `thoughts/`, so one
    listing query and one read per user), up to USERS_SHOWN; and whether more follow."""
    listed = documents.list_page(brain, FOLDER, limit=USERS_SHOWN)
    users = []
    for entry in listed.items:
        if not entry.is_dir:
            continue
        prefix = entry.path.rstrip("/") + "/"
        first, _ = documents.repo.page(brain.id, prefix, after=None, limit=1)
        if first and first[0].memory is not None and first[0].memory.user_id:
            users.append(ThoughtUser(first[0].memory.user_id, prefix))
    return users, listed.next_cursor is not None
