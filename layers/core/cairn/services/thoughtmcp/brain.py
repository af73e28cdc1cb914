"""Which brain ThoughtMCP's memories live in (one marked for them), and the memories the
reasoning tools read as context."""

from __future__ import annotations

from typing import Final

from cairn.auth import access
from cairn.domain.errors import Forbidden
from cairn.domain.models import Brain
from cairn.services.brains import BrainService
from cairn.services.thoughtmcp.checks import check_new_user_id, check_user, check_user_id
from cairn.services.thoughtmcp.memories import ThoughtMemories
from cairn.services.thoughtmcp.models import Filters
from cairn.services.thoughtmcp.reasoning.context import RelevantMemory

DEFAULT_BRAIN_NAME: Final = "ThoughtMCP"


BRAIN_MARK: Final = "thoughtmcp_brain"
"""Brain metadata marking the brain a tenant's ThoughtMCP memories live in when none is configured."""


def thought_brain(
    brains: BrainService, ref: str | None, *, user_id: str | None = None, create: bool = False
) -> Brain | None:
    """The brain ThoughtMCP's memories live in: `ref` (CAIRN_THOUGHTMCP_BRAIN), else the caller's
    tenant's brain marked as ThoughtMCP's, never another library (a first write makes one, named
    ThoughtMCP); None for a read before it exists. With `user_id`, for a call about that user's
    memories: refused (check_user) unless the caller acts for the user there, before anything is made."""
    if user_id is not None:
        (check_new_user_id if create else check_user_id)(user_id)
    brain = brains.resolve(ref) if ref else _marked(brains)
    if user_id is not None:
        check_user(user_id, brain)
    if brain is not None or not create:
        return brain
    _check_none_held(brains)
    return brains.first(
        DEFAULT_BRAIN_NAME, "thoughtmcp", visibility="tenant", metadata={BRAIN_MARK: True}, tenant_first=True
    )


def _check_none_held(brains: BrainService) -> None:
    """Forbidden when the caller's tenant has its ThoughtMCP brain already but the caller may not
    use it (a key limited to other brains): a first write makes a brain only where none is, so a
    refused call changes nothing."""
    tenant, _ = access.creator()
    with access.as_system():
        held = [b for b in brains.own(tenant) if b.metadata.get(BRAIN_MARK) is True]
    if held:
        raise Forbidden("this credential may not use its tenant's ThoughtMCP brain")


def _marked(brains: BrainService) -> Brain | None:
    return next((b for b in access.defaults(brains.own()) if b.metadata.get(BRAIN_MARK) is True), None)


class ThoughtContext:
    """MemoryContext (services/thoughtmcp/reasoning/context.py): a user's memories most relevant to a problem,
    by composite recall; reading them as context is not an access (no reinforcement)."""

    def __init__(self, thoughts: ThoughtMemories, brains: BrainService, ref: str | None) -> None:
        self.thoughts = thoughts
        self.brains = brains
        self.ref = ref

    def relevant(self, user_id: str, text: str, limit: int) -> list[RelevantMemory]:
        brain = thought_brain(self.brains, self.ref, user_id=user_id)
        if brain is None:
            return []
        found, _ = self.thoughts.recall(
            brain, user_id, text=text, filters=Filters(), limit=limit, min_similarity=0.0, reinforce=False
        )
        return [RelevantMemory(f.row.id, f.content, f.row.sector, round(f.score.total, 6)) for f in found]
