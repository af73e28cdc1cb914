"""Markup Python's HTML parser cannot read, made readable without moving any text.

`html.parser` (which BeautifulSoup uses here, and image_references.py directly) raises
AssertionError on `<![` not followed by one of the marked-section keywords it knows (`<![CDATA[`,
`<![if`, ...): a note saying `x <![ y`, or a page with stray markup, made ingest fail with a 500.
Such a `<` becomes a space, so offsets into the text stay where they were.
"""

from __future__ import annotations

import re

_PATTERN = r"<(?=!\[(?!(?:cdata|if|else|endif|temp|ignore|include|rcdata)(?![\w.:-])))"
_UNREADABLE = re.compile(_PATTERN, re.I)
_UNREADABLE_BYTES = re.compile(_PATTERN.encode(), re.I)


def readable(markup: str) -> str:
    """`markup` with each `<` of an unknown marked section a space (module docstring)."""
    return _UNREADABLE.sub(" ", markup) if "<![" in markup else markup


def readable_bytes(markup: bytes) -> bytes:
    """`readable` for undecoded markup (an ASCII-compatible encoding, as BeautifulSoup detects)."""
    return _UNREADABLE_BYTES.sub(b" ", markup) if b"<![" in markup else markup
