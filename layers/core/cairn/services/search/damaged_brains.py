"""A search over several brains when one brain's index cannot be read (BrainIndexDamaged: on the
embedded store, its keyword index; every leg of a search reads it there, so the brain gives no
vector-only hits either). The search answers from the other brains and names the one left out,
with the refusal a search of it alone gets; a search of one brain, or whose every brain is
damaged, is refused as before. Nothing is lost silently: the caller reads which brain was not
searched, and why, beside the hits, and the log says it too (one warning per brain left out)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from cairn.domain.errors import BrainIndexDamaged

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unsearched:
    """A brain a search over several left out, with the error a search of it alone answers."""

    brain_id: str
    code: str
    message: str


def around_damage(
    brain_ids: Sequence[str], run: Callable[[tuple[str, ...]], T]
) -> tuple[T, list[Unsearched]]:
    """`run` over the brains; when it is refused for one of them as damaged, run again without
    it (at most once per brain), and that brain named."""
    left = tuple(dict.fromkeys(brain_ids))
    unsearched: list[Unsearched] = []
    while True:
        try:
            return run(left), unsearched
        except BrainIndexDamaged as damaged:
            rest = tuple(brain_id for brain_id in left if brain_id != damaged.brain_id)
            if len(rest) == len(left) or not rest:
                raise
            log.warning(
                "a search over %d brains left out brain %s: its index is damaged (%s); the others answered",
                len(left),
                damaged.brain_id,
                damaged.code,
            )
            unsearched.append(Unsearched(damaged.brain_id, damaged.code, damaged.message))
            left = rest
