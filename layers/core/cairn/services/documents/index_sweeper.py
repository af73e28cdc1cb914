"""The sweep of index intents a crashed writer left (services/documents/index_intents.py).

A process settles every standing intent when it opens the data (`cairn serve`, `cairn mcp`, the
CLI); while it runs, this thread settles those older than `grace_s` every `every_s` seconds: what
another process sharing the data directory left when it died (a CLI killed mid-ingest). Intents
younger than the grace belong to writers still at work; settling them would be safe (the
reconcile protocol allows any number of settlers) but is work they are about to do. On AWS the
scheduled rule's `sweep` event does the same (entrypoints/aws_lambda.py). Each tick also removes
the bytes of document versions replaced more than a quarter of an hour ago
(services/documents/old_bytes.py), and once an hour those of writes that stopped before committing
their records (services/documents/orphan_bytes.py, where the blob store can list its folders) and
uploads a week old (services/documents/upload_expiry.py). `settlers` settle, after the intents,
what else a stopped writer leaves for the sweep, with the same grace: the composition root gives
it the links memories' commits left pending (services/links/pending.py), which it does not know.
`chores`, last, carry on for a bounded while work too long for a request: the composition root
gives it the later looks of brain deletions still settling (services/erasure/settling.py) and
the build of the current memories' entries of brains written before them
(services/documents/current_memories.py). A chore failing with a Cairn error (a store busy, a
conflict lost again and again) is said and left for the next sweep; the chores after it still run.
A stop asked during a tick ends it at its next step:
between two documents the intents name, before each settler and chore, and inside them (they
are given the question), so `stop` does not wait out a long list or a chore's budget: what is
left stays for the next sweep, or the next start, which settles every standing intent first.
The AWS sweep asks the same question of its invocation's time left (entrypoints/aws_lambda.py
`time_running_out`), so its chores end before the function's 900 s do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from cairn.domain.errors import CairnError
from cairn.services.documents import orphan_bytes
from cairn.services.documents.service import DocumentService
from cairn.services.jobs.periodic import Periodic

log = logging.getLogger(__name__)

SWEEP_EVERY_S = 30.0
GRACE_S = 60.0


class IndexSweeper:
    def __init__(
        self,
        documents: DocumentService,
        *,
        every_s: float = SWEEP_EVERY_S,
        grace_s: float = GRACE_S,
        settlers: Sequence[Callable[[float, Callable[[], bool]], int]] = (),
        chores: Sequence[Callable[[Callable[[], bool]], object]] = (),
        ended: Callable[[], None] = lambda: None,
    ) -> None:
        """`ended`: run when a tick's chores end, however they do (what they shared is dropped)."""
        if every_s <= 0 or grace_s < 0:
            raise ValueError("every_s must be positive and grace_s not negative")
        self.documents = documents
        self.every_s = every_s
        self.grace_s = grace_s
        self.settlers = tuple(settlers)
        self.chores = tuple(chores)
        self.ended = ended
        self._orphans_at: float | None = None
        self._loop = Periodic(
            "cairn-index-sweeper", every_s, self.tick, first_at_once=False, failure="the index sweep failed"
        )

    def tick(self, stop: Callable[[], bool] | None = None) -> int:
        """One sweep; `stop` (the AWS sweep's: its invocation's time running out) ends it at its
        next step as a stop of the process does."""
        stopping = self._loop.stopping if stop is None else (lambda: self._loop.stopping() or stop())
        settled = self.documents.settle_pending(self.grace_s, stopping)
        if settled:
            log.warning("settled %d documents whose writer stopped before indexing them", settled)
        for settle in self.settlers:  # after the intents: a memory's links need it indexed
            if stopping():
                return settled
            settled += settle(self.grace_s, stopping)
        if stopping():
            return settled
        # replaced versions' bytes past their grace (old_bytes.py), a backlog until the stop
        self.documents.collect_old_bytes(stop=stopping)
        now = time.monotonic()
        if self._orphans_at is None or now - self._orphans_at >= orphan_bytes.EVERY_S:
            self._orphans_at = now
            self.documents.collect_orphan_bytes()  # bytes of writes that never committed (orphan_bytes.py)
            self.documents.expire_uploads()  # uploads a week old, as S3's lifecycle (upload_expiry.py)
        try:
            for chore in self.chores:
                if stopping():
                    break
                try:
                    chore(stopping)
                except CairnError as exc:  # a store busy, a conflict lost again and again: this chore's alone
                    log.warning("a sweep chore (%s) is left for the next sweep: %s", _name(chore), exc)
        finally:
            self.ended()
        return settled

    def start(self) -> None:
        self._loop.start()

    def stop(self, within_s: float | None = None) -> bool:
        """Ask the sweep to stop and wait up to `within_s` (None: until it has); whether it has."""
        return self._loop.stop(within_s)


def _name(chore: Callable[..., object]) -> str:
    return str(getattr(chore, "__qualname__", type(chore).__name__))
