"""A gbrain collection's state, kept in its brain's metadata, and the gates page mutations pass.

`gbrain_state` (active | detached | restoring), `gbrain_needs_full_sync` and `gbrain_writable`. A
restoring or needs-full-sync collection refuses every page mutation before anything else is checked;
a read-only one after the caller's input is validated and the page resolved.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import Brain
from cairn.domain.pages import CollectionReadOnly, CollectionRestoring
from cairn.services.repositories import BrainRepository

STATES = ("active", "detached", "restoring")
STATE_KEY = "gbrain_state"
NEEDS_FULL_SYNC_KEY = "gbrain_needs_full_sync"
WRITABLE_KEY = "gbrain_writable"
UPDATE_RETRIES = 5


@dataclass(frozen=True)
class CollectionState:
    name: str
    state: str
    needs_full_sync: bool
    writable: bool


def state_of(brain: Brain, name: str | None = None) -> CollectionState:
    """The brain's collection state; `name` is how gbrain calls the collection (its slug by default)."""
    meta = brain.metadata
    state = meta.get(STATE_KEY)
    return CollectionState(
        name=brain.slug if name is None else name,
        state=state if isinstance(state, str) and state in STATES else "active",
        needs_full_sync=meta.get(NEEDS_FULL_SYNC_KEY) is True,
        writable=meta.get(WRITABLE_KEY) is not False,
    )


def set_state(
    repo: BrainRepository,
    brain: Brain,
    *,
    state: str | None = None,
    needs_full_sync: bool | None = None,
    writable: bool | None = None,
) -> CollectionState:
    """Mark a collection restoring, needing a full sync, or read-only (and back)."""
    if state is not None and state not in STATES:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}")
    changes = {STATE_KEY: state, NEEDS_FULL_SYNC_KEY: needs_full_sync, WRITABLE_KEY: writable}
    wanted = {k: v for k, v in changes.items() if v is not None}

    def change(stored: Brain) -> Brain:
        return stored.model_copy(update={"metadata": {**stored.metadata, **wanted}})

    for _ in range(UPDATE_RETRIES):
        try:
            return state_of(repo.update(brain.id, change))
        except Conflict:
            continue
    raise Conflict(f"collection {brain.slug} kept changing; try again")


def refuse_if_restoring(brain: Brain, name: str) -> None:
    state = state_of(brain, name)
    if state.state == "restoring" or state.needs_full_sync:
        raise CollectionRestoring(state.name, state.state, state.needs_full_sync)


def guard_mutation(brain: Brain, name: str) -> None:
    """Restoring or needs-full-sync first, then read-only."""
    refuse_if_restoring(brain, name)
    if not state_of(brain, name).writable:
        raise CollectionReadOnly(name)
