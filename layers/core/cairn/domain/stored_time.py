"""Whether a field of a stored record, read raw, is a time as a Document's validation reads it."""

from __future__ import annotations

from datetime import datetime

from pydantic import TypeAdapter, ValidationError

from cairn.domain.models import Moment

MOMENT: TypeAdapter[datetime] = TypeAdapter(Moment)
"""A Document's datetime field as its validation reads it, for one field alone."""


def is_time(value: object) -> bool:
    """Text that decoding reads as a time; a value of any other kind, None included, is left to
    decoding, which reads it or names the record damaged. Read as decoding reads it: text that
    `datetime.fromisoformat` takes but validation does not ("2026-W01-1") is damage."""
    if not isinstance(value, str):
        return False
    try:
        MOMENT.validate_python(value)
    except ValidationError:
        return False
    return True
