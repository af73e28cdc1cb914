"""The failures of a scrub of the stores' files (services/erasure/service.py): those that pass and
are tried again, and those that stop an erasure with its reason on the receipt."""

from __future__ import annotations

import logging
from typing import TypeGuard

from cairn.domain.errors import CairnError, Conflict, Unavailable

log = logging.getLogger(__name__)

SCRUB_TRIES = 5
SCRUB_RETRIED = (Unavailable, Conflict)
"""A scrub's failures that pass: a lock or readers holding the store's log, a store refusing for
its rate, a race. A plain CairnError is one too: the stores raise it for a log readers kept busy or
an index closing meanwhile."""


class ScrubFailed(CairnError):
    """The stores' files could not be scrubbed for a reason trying again at once cannot fix (a bug,
    or a store refusing the request itself): the erasure stays running, the reason on its receipt,
    and is tried again when the server next starts or its receipt is asked for (after a fix)."""


def passes(exc: Exception) -> TypeGuard[CairnError]:
    """Whether trying the scrub again may succeed (SCRUB_RETRIED, or a plain CairnError)."""
    return isinstance(exc, SCRUB_RETRIED) or type(exc) is CairnError


def scrub_failed(erasure_id: str, exc: Exception) -> ScrubFailed:
    """The ScrubFailed for `exc`, logged: a bug's message (which may name internals) and traceback
    go to the log only."""
    if isinstance(exc, CairnError):
        reason = exc.message
        log.warning("erasure %s: the stores' files could not be scrubbed: %s", erasure_id, reason)
    else:
        reason = f"an internal error ({type(exc).__name__}) the server's log shows"
        log.error("erasure %s: the stores' files could not be scrubbed", erasure_id, exc_info=exc)
    return ScrubFailed(
        f"everything it removes is gone, but the store's files could not be scrubbed "
        f"({reason[:300]}); it is tried again when the server next starts or "
        f"GET /v1/erasures/{erasure_id} is asked"
    )
