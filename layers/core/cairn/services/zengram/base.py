"""The brain zengram serves, and the query-parameter rules its operations share."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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


_LEADING_INT = re.compile(r"\s*([+-]?\d+)")


def bounded_int(raw: str | None, *, default: int, low: int, high: int) -> int:
    """zengram's `parseInt(raw) || default`, clamped to low..high: the number its leading digits
    spell (`"3.9"` and `"12abc"` are 3 and 12); absent, unparsable or 0 -> the default."""
    found = _LEADING_INT.match(str(raw)) if raw is not None else None
    value = int(found.group(1)) if found else 0
    return min(max(value or default, low), high)


_CALL_BRAIN: ContextVar[list[Brain] | None] = ContextVar("zengram_call_brain", default=None)


class ZengramBase:
    """What every part of ZengramApi (api.py) starts from."""

    def __init__(self, deps: ZengramDeps) -> None:
        self.c = deps

    @contextmanager
    def one_call(self) -> Iterator[None]:
        """Within it, the brain is resolved once: a call's operation and its answer's naming of the
        brain read the same one (on DynamoDB a resolution is a pointer query and a batch read)."""
        token = _CALL_BRAIN.set([])
        try:
            yield
        finally:
            _CALL_BRAIN.reset(token)

    def brain(self, *, create: bool = False) -> Brain:
        """The configured brain (CAIRN_ZENGRAM_BRAIN), else the only brain of a key limited to
        one, else the default brain; with `create`, a first write makes "Shared Brain" (one brain
        however many first writes race: BrainService.first). Within `one_call`, the first brain
        found is kept for the rest of the call (a failure is not: a later write may create it)."""
        memo = _CALL_BRAIN.get()
        if memo:
            return memo[0]
        brain = self._resolve(create)
        if memo is not None:
            memo.append(brain)
        return brain

    def _resolve(self, create: bool) -> Brain:
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
