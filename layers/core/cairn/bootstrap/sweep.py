"""The sweep's chores wired onto a container (services/documents/index_sweeper.py), and the listing of
every brain they share: read once a tick, forgotten when the tick ends."""

from __future__ import annotations

from collections.abc import Callable

from cairn.auth import access
from cairn.container import Container
from cairn.domain.models import Brain
from cairn.ports.records import MAX_GET_MANY
from cairn.services.documents.current_memories import ENTRIES_BUDGET_S
from cairn.services.documents.index_sweeper import IndexSweeper
from cairn.services.documents.memory_counts import COUNTS_BUDGET_S
from cairn.services.mnemosyne.concept_reach_sweep import ReachSweep
from cairn.services.mnemosyne.image_refs_sweep import ImageRefsSweep
from cairn.services.repositories import BrainRepository, documents_pk


def every_brain(repo: BrainRepository) -> Callable[[], list[Brain]]:
    """Every brain's record, live and deleted, in id order (the maintenance report's listing)."""

    def every() -> list[Brain]:
        found: list[Brain] = []
        after: str | None = None
        while True:
            page, after = repo.page(after=after, limit=MAX_GET_MANY)
            found += page
            if after is None:
                return found

    return every


class TickBrains:
    """Every brain's record listed on a tick's first ask and shared by its chores; `forget` (the
    tick's end) drops it, so the next tick lists them as they are then."""

    def __init__(self, every: Callable[[], list[Brain]]) -> None:
        self._every = every
        self._listed: list[Brain] | None = None

    def every(self) -> list[Brain]:
        if self._listed is None:
            self._listed = self._every()
        return self._listed

    def live(self) -> list[Brain]:
        return [b for b in self.every() if b.deleted_at is None]

    def forget(self) -> None:
        self._listed = None


def index_sweeper(container: Container) -> IndexSweeper:
    """The sweep of what stopped writers left (services/documents/index_sweeper.py): index intents,
    then the links memories' commits left pending (services/links/pending.py); then the audit
    entries stopped processes left in the spill (services/audit.py); then the expiry and adoption of
    the audit's and the erased subjects' marks (services/mark_lifetimes.py); then the later looks of brain
    deletions still settling (services/erasure/settling.py); then the jobs marked to be forgotten
    once finished (services/jobs/job_log.py: an ingest refused for an erased scope); then, for a
    while, the builds of the current memories' entries, the memory counts and their creation-time
    entries of brains written before them; then, for a while, the pass over the concept links
    earlier releases left without a reach (services/mnemosyne/concept_reach_sweep.py), and the pass
    over the image references earlier releases left of documents gone (services/mnemosyne/
    image_refs_sweep.py); last, what is left of that (services/maintenance.py). The last four list
    the brains once a tick."""
    brains = TickBrains(every_brain(container.brains.repo))

    def build_entries(stop: Callable[[], bool]) -> int:
        pks = [documents_pk(brain.id) for brain in brains.live()]
        repo = container.documents.repo
        steps = repo.current.carry_on(pks, budget_s=ENTRIES_BUDGET_S, stop=stop)
        counts, times = repo.counts.unfinished(pks)  # one batch read, not a read of each brain
        steps += repo.counts.carry_on(counts, budget_s=COUNTS_BUDGET_S, stop=stop)
        return steps + repo.counts.carry_on_times(times, budget_s=COUNTS_BUDGET_S, stop=stop)

    reach = ReachSweep(
        container.adapters.records,
        container.concepts.reach,
        container.documents.repo,
        container.adapters.clock,
    )

    def sweep_reach(stop: Callable[[], bool]) -> int:
        with access.as_system():
            return reach.carry_on(brains.live, stop=stop)

    images = container.ingest.images
    refs = (
        ImageRefsSweep(container.adapters.records, images, container.brains.repo, container.adapters.clock)
        if images is not None
        else None
    )

    def sweep_image_refs(stop: Callable[[], bool]) -> int:
        if refs is None:
            return 0
        with access.as_system():
            return refs.carry_on(brains.live, stop=stop)

    def report(stop: Callable[[], bool]) -> None:
        maintenance = container.health.maintenance
        if maintenance is not None and not stop():
            # for /healthz and the AWS sweep's answer (services/maintenance.py)
            maintenance.report(listed=brains.every())

    return IndexSweeper(
        container.documents,
        settlers=[container.pending_links.settle],
        chores=[
            lambda _stop: container.audit.take_spilled(),
            container.audit.erased.sweep,
            container.erasure.erased.sweep,
            container.erasure.settle,
            container.job_log.forget_marked,
            build_entries,
            sweep_reach,
            sweep_image_refs,
            report,
        ],
        ended=brains.forget,
    )
