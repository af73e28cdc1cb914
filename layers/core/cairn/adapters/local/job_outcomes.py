"""What every job runner (the embedded engine, the fake, Step Functions) says of an attempt: the
fields a progress report sets, which handler errors fail a job at once, and the one-line error
callers see; and LeaseLost, raised into a handler whose attempt no longer holds its job."""

from __future__ import annotations

import math
from typing import Any

from cairn.domain.errors import (
    CairnError,
    Conflict,
    DamagedContent,
    FetchRefused,
    FileTooLarge,
    Forbidden,
    InvalidInput,
    NoBrain,
    NotFound,
    PayloadTooLarge,
)
from cairn.domain.scrub import scrub

MAX_ERROR_CHARS = 500
MAX_MESSAGE_CHARS = 500


def progress_changes(fraction: float, message: str | None) -> dict[str, Any]:
    """The job fields a progress report sets: the fraction clamped to [0, 1], a short message."""
    if not isinstance(fraction, int | float) or math.isnan(fraction):
        raise InvalidInput("progress must be a number")
    changes: dict[str, Any] = {"progress": min(max(float(fraction), 0.0), 1.0)}
    if message is not None:
        changes["message"] = str(message)[:MAX_MESSAGE_CHARS]
    return changes


class LeaseLost(Conflict):
    """This attempt no longer owns its job (its lease expired and another worker took it, or its
    process, stopping, handed it back)."""


REFUSALS: tuple[type[CairnError], ...] = (
    InvalidInput,
    NotFound,
    Forbidden,
    NoBrain,
    FileTooLarge,
    PayloadTooLarge,
    FetchRefused,
    DamagedContent,
)
"""What a handler raises when its input cannot be done: another attempt would only fail the same
way, so the job fails at once, logged in a line (no traceback: nothing is wrong with Cairn)."""


def error_text(exc: BaseException) -> str:
    """One line for callers: a CairnError's message, else `Type: message`; never a traceback, nor
    a credential the library that raised it quoted (a store's endpoint URL with its password): the
    job's record keeps it, its pollers read it, and Step Functions' history holds it."""
    text = exc.message if isinstance(exc, CairnError) else f"{type(exc).__name__}: {exc}".rstrip(": ")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return scrub(first)[:MAX_ERROR_CHARS]


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `6 h 5 min`: a running time for people."""
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min" if minutes else f"{seconds:.0f} s"
    return f"{minutes // 60} h" + (f" {minutes % 60} min" if minutes % 60 else "")
