"""What a write answers when its record is committed but the chunk index refuses its chunks.

The chunk index (another process holding its writer lock past the wait, with no progress shown)
can refuse a write after the write's record committed. The record and its index intent are
stored, so the document is there to read and the sweeper indexes it once the index is free
(services/documents/index_intents.py); the write is still not acknowledged, since it is not yet
searchable. The index's own refusal says "nothing was changed: try again", true of the index and
false of the write: a client that believed it would send an append twice. So the write is
refused with what did happen.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from cairn.domain.errors import Unavailable

log = logging.getLogger(__name__)


@contextlib.contextmanager
def indexing_after_commit(what: str) -> Iterator[None]:
    """Around the index writes that follow a commit of `what` ("the document at notes/a.md")."""
    try:
        yield
    except Unavailable as exc:
        if type(exc) is not Unavailable:  # a full disk (StorageFull) says what it is itself
            raise
        log.warning("%s was stored, its chunks left for the sweeper: %s", what, exc.message)
        raise Unavailable(
            f"{what} was stored, but the search index is busy (another process holds it), so it is "
            "not searchable yet; it will be indexed once the index is free: read it back before "
            "sending it again",
            retry_after_s=exc.retry_after_s,
        ) from exc
