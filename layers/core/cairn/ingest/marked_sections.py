"""Marked sections (`<![...`) read as Cairn has always read them, whatever the HTML parser.

A stray `<![` (not followed by a marked-section keyword: `<![CDATA[`, `<![if`, ...) is text: a note
saying `x <![ y` keeps `y`, where an HTML5 parser reads a bogus comment up to the next `>` (and
Python's html.parser raised AssertionError). Such a `<` becomes a space, so offsets into the text
stay where they were. A CDATA section's content is text too (`cdata_as_text`), as html.parser gave
it; an HTML5 parser makes it a comment.
"""

from __future__ import annotations

import html
import re

_UNREADABLE = re.compile(r"<(?=!\[(?!(?:cdata|if|else|endif|temp|ignore|include|rcdata)(?![\w.:-])))", re.I)
_CDATA_OPEN = re.compile(r"<!\[cdata\[", re.I)
_CDATA_CLOSE = re.compile(r"\]\s*\]\s*>")


def readable(markup: str) -> str:
    """`markup` with each `<` of an unknown marked section a space (module docstring)."""
    return _UNREADABLE.sub(" ", markup) if "<![" in markup else markup


def cdata_as_text(markup: str) -> str:
    """Each `<![CDATA[...]]>` replaced by its content, escaped; an unclosed one's `<` escaped."""
    if "<![" not in markup:
        return markup
    parts, copied = [], 0
    while (opened := _CDATA_OPEN.search(markup, copied)) is not None:
        closed = _CDATA_CLOSE.search(markup, opened.end())
        parts.append(markup[copied : opened.start()])
        if closed is None:  # nor does any later one close
            parts.append("&lt;")
            copied = opened.start() + 1
            break
        parts.append(html.escape(markup[opened.end() : closed.start()], quote=False))
        copied = closed.end()
    parts.append(markup[copied:])
    return "".join(parts)
