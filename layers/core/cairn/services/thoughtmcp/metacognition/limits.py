"""The bound on what ThoughtMCP's metacognitive and reasoning tools read (reasoning/service.py checks
its arguments here too): every text argument, and the texts of a list argument together, at most
MAX_TEXT characters, as remember bounds a memory's content. The rules read every word, so without a
bound one call could hold a worker for minutes; a longer text is refused in ThoughtMCP's way before
anything reads it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cairn.services.thoughtmcp.models import MAX_CONTENT, ThoughtError

MAX_TEXT: Final = MAX_CONTENT


def check_texts(**texts: str | Sequence[str] | None) -> None:
    """Refuses the first argument (by its name) over MAX_TEXT characters."""
    for name, value in texts.items():
        size = len(value) if isinstance(value, str) else sum(len(v) for v in value or ())
        if size > MAX_TEXT:
            raise ThoughtError(
                f"{name} must be at most {MAX_TEXT} characters (received {size})",
                f"Shorten {name} to at most {MAX_TEXT} characters",
            )
