"""The brain zengram serves, and the query-parameter rules its operations share."""

from __future__ import annotations

from cairn.domain.errors import NoBrain
from cairn.domain.models import Brain, MemoryType
from cairn.services.zengram.deps import ZengramDeps

SERVICE = "zengram"


DEFAULT_BRAIN_NAME = "Shared Brain"
DEFAULT_BRAIN_SLUG = "shared-brain"


DEFAULT_AGENT = "claude-code"
"""The agent a request speaks for when it names none: a store's source agent over MCP, and the
briefing's requesting agent, whose own entries it leaves out (the seed's default)."""


BRIEFED_TYPES = (MemoryType.event, MemoryType.fact, MemoryType.decision, MemoryType.status)


def one_of(value: str | None) -> tuple[str, ...]:
    return (value,) if value else ()


def matches(value: str | None, wanted: str | None) -> bool:
    return not wanted or value == wanted


def bounded_int(raw: str | None, *, default: int, low: int, high: int) -> int:
    """zengram's parseInt: absent or unparsable -> the default; clamped to low..high."""
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        return default
    return min(max(value, low), high)


class ZengramBase:
    """What every part of ZengramApi (api.py) starts from."""

    def __init__(self, deps: ZengramDeps) -> None:
        self.c = deps

    def brain(self, *, create: bool = False) -> Brain:
        """The configured brain (CAIRN_ZENGRAM_BRAIN), else the only brain of a key limited to
        one, else the default brain; with `create`, a first write makes "Shared Brain" (one brain
        however many first writes race: BrainService.first)."""
        wanted = self.c.options.zengram_brain
        try:
            return self.c.brains.resolve(wanted) if wanted else self._default()
        except NoBrain:
            if not create or wanted:
                raise
            return self.c.brains.first(DEFAULT_BRAIN_NAME, DEFAULT_BRAIN_SLUG, visibility="tenant")

    def _default(self) -> Brain:
        from cairn.auth import access

        current = access.current()
        if (
            current is not None
            and current.principal.brains is not None
            and len(current.principal.brains) == 1
        ):
            (only,) = current.principal.brains
            return self.c.brains.get(only)
        return self.c.brains.resolve(None)
