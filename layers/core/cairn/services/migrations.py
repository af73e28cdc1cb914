"""What a release changes in data stored by an earlier one, done once when a store is opened.

Each migration is named; the names applied are kept in one record (`meta` / `migrations`), so a
store pays one read per opening once they have run. Each is safe to run twice and alongside
another process running it (conditional writes, read again on a lost race). A store with no
brain has nothing to migrate and gets no record.

- `brain-owners`: brains made before every brain had an owner (the CLI's, `cairn ingest --create`'s)
  belong to the machine's owner (auth/access.py LOCAL_OWNER); before, an ownerless private brain
  was readable by every principal of its tenant.
- `thoughtmcp-brain`: ThoughtMCP memories used to land in the first brain when no brain was
  configured for them; now they live in a brain marked for them (services/thoughtmcp/memories.py BRAIN_MARK).
  In each tenant the first brain already holding ThoughtMCP memories gets the mark, so its users
  keep finding them.
- `brain-pointers`: a principal's brains are found through pointers in its tenant's partition and
  the public one (services/brain_pointers.py), which earlier releases did not write; each live
  brain gets its pointers.
- `tenant-slugs`: slugs are unique within a tenant, claimed by a pointer per tenant and slug
  (services/brain_slugs.py); earlier releases kept one pointer per slug for every tenant. Each
  live brain's pointer moves to its tenant's key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress

from cairn.auth.access import LOCAL_OWNER
from cairn.domain.errors import Conflict
from cairn.domain.models import Brain
from cairn.ports.records import Item, RecordStore
from cairn.services.repositories import BrainRepository, doc_key
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from cairn.services.thoughtmcp.models import FOLDER

log = logging.getLogger(__name__)
MARKER = ("meta", "migrations")


def _owners(records: RecordStore, brains: list[Brain]) -> None:
    repo = BrainRepository(records)
    for brain in brains:
        if brain.owner is None:
            _update(
                repo,
                brain,
                lambda b: b if b.owner is not None else b.model_copy(update={"owner": LOCAL_OWNER}),
            )
            log.info("brain %s had no owner: it is now the machine owner's (%s)", brain.slug, LOCAL_OWNER)


def _thought_brains(records: RecordStore, brains: list[Brain]) -> None:
    repo = BrainRepository(records)
    marked = {b.owner_tenant for b in brains if b.metadata.get(BRAIN_MARK) is True}
    for brain in brains:  # oldest first: the brain ThoughtMCP used to fall back on
        if brain.owner_tenant in marked:
            continue
        pk, prefix = doc_key(brain.id, f"{FOLDER}/")
        if records.query(pk, prefix, limit=1).items:
            _update(
                repo, brain, lambda b: b.model_copy(update={"metadata": {**b.metadata, BRAIN_MARK: True}})
            )
            marked.add(brain.owner_tenant)
            log.info("brain %s holds ThoughtMCP memories: it stays their brain", brain.slug)


def _pointers(records: RecordStore, brains: list[Brain]) -> None:
    BrainRepository(records).mend_pointers()


MIGRATIONS: dict[str, Callable[[RecordStore, list[Brain]], None]] = {
    "brain-owners": _owners,
    "thoughtmcp-brain": _thought_brains,
    "brain-pointers": _pointers,
    "tenant-slugs": _pointers,  # mend_pointers moves an earlier release's slug pointers too
}


def migrate(records: RecordStore) -> list[str]:
    """Apply the migrations this store has not had; the names of those applied now."""
    marker = records.get(*MARKER)
    applied = list(marker.data.get("applied", [])) if marker else []
    missing = [name for name in MIGRATIONS if name not in applied]
    if not missing:
        return []
    brains = _all_brains(BrainRepository(records))
    if not brains:
        return []
    for name in missing:
        MIGRATIONS[name](records, brains)
        brains = _all_brains(BrainRepository(records))
    with suppress(Conflict):  # lost: another process recorded them, having run the same migrations
        records.put(Item(*MARKER, data={"applied": [*applied, *missing]}), marker.version if marker else 0)
    return missing


def _all_brains(repo: BrainRepository) -> list[Brain]:
    brains: list[Brain] = []
    after: str | None = None
    while True:
        page, after = repo.page(after=after, limit=1000)
        brains += page
        if after is None:
            return brains


def _update(repo: BrainRepository, brain: Brain, change: Callable[[Brain], Brain]) -> None:
    for _ in range(5):
        try:
            repo.update(brain.id, change)
            return
        except Conflict:
            continue
