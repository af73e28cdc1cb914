"""Mnemosyne's library types: what a library holds, which selects its ingest and ranking profile."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

LIBRARY_TYPES: Final = (
    "fiction", "nonfiction", "technical", "music", "film", "art", "journal", "business", "finance",
)  # fmt: skip
DEFAULT_LIBRARY_TYPE: Final = "nonfiction"
"""The type of a brain that names none: general prose."""
TYPE_KEY: Final = "library_type"
"""Where a brain's metadata keeps its library type."""


def library_type_of(metadata: Mapping[str, object]) -> str | None:
    """The library type a brain's metadata names, or None (then it is a DEFAULT_LIBRARY_TYPE library)."""
    kind = metadata.get(TYPE_KEY)
    return kind if isinstance(kind, str) and kind in LIBRARY_TYPES else None
