"""What a zengram operation answers (its status, body and headers), and `run`: every failure as
zengram answers it, for the HTTP routes and the MCP tools alike."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cairn.auth.access import InsufficientScope
from cairn.domain.errors import (
    CairnError,
    Conflict,
    DamagedContent,
    Forbidden,
    InvalidInput,
    NoBrain,
    NotFound,
    Unavailable,
    storage_failure,
)
from cairn.services.zengram.validate import (
    Refused,
)

log = logging.getLogger("cairn.zengram")


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def refusal(exc: Refused) -> Reply:
    return Reply(exc.status, exc.body)


def run(op: Callable[[], Reply]) -> Reply:
    """An operation's reply; every failure as zengram answers it."""
    try:
        return op()
    except Refused as exc:
        return refusal(exc)
    except (InsufficientScope, Forbidden) as exc:
        return Reply(403, {"error": exc.message})
    except (NotFound, NoBrain) as exc:
        return Reply(404, {"error": exc.message})
    except InvalidInput as exc:
        return Reply(400, {"error": exc.message})
    except Conflict as exc:
        return Reply(409, {"error": exc.message})
    except Unavailable as exc:
        return Reply(503, {"error": exc.message}, {"Retry-After": str(exc.retry_after_s)})
    except DamagedContent as exc:
        return Reply(503, {"error": exc.message})
    except CairnError as exc:
        return Reply(400, {"error": exc.message})
    except Exception as exc:
        known = storage_failure(exc)  # a full disk or a damaged database: not a bug of ours
        if isinstance(known, Unavailable):
            return Reply(503, {"error": known.message}, {"Retry-After": str(known.retry_after_s)})
        if known is not None:
            return Reply(503, {"error": known.message})
        log.exception("zengram API operation failed")
        return Reply(500, {"error": "Internal server error"})
