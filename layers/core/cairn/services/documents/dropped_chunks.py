"""What another service keeps keyed by a document's chunk ids, told when a rewrite drops chunks.

A rewrite that leaves a document fewer chunks removes the chunks past its new count from the
index (DocumentIndexer.apply), whichever path wrote it: a REST PUT, a batch, a bulk write, a
gbrain page, a memory's update, a restore, a reconcile of a write a crash cut short. Records
keyed by those chunk ids (Mnemosyne's concept links, whose names come from the dropped text) are
another service's; it registers here, and every path that applies a document's chunks tells it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from cairn.auth import access
from cairn.domain.models import Document

log = logging.getLogger(__name__)

Dropped = Callable[[str, str, int], object]
"""(brain id, document id, chunks kept): the chunks of ordinals from the count kept on are gone."""


class DroppedChunks:
    def __init__(self) -> None:
        self._hooks: list[Dropped] = []

    def add(self, hook: Dropped) -> None:
        self._hooks.append(hook)

    def tell(self, doc: Document, kept: int) -> None:
        """Run every hook, as the system (the write was checked). A failing hook is logged: the
        write stands, and what the hook keeps is bounded for the next rewrite or the erasure."""
        with access.as_system():
            for hook in self._hooks:
                try:
                    hook(doc.brain_id, doc.id, kept)
                except Exception:
                    log.exception("tidying after document %s lost chunks past %d failed", doc.id, kept)
