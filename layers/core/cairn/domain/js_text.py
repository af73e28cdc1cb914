"""Blank as JavaScript's `String.prototype.trim()` reads it, for the surfaces whose original
systems are TypeScript (the canonical Jeffs Brain server, zengram, gbrain, ThoughtMCP), which
refuse a text that `trim()` leaves empty. Python's `str.strip()` differs both ways: it removes
U+001C..U+001F and U+0085, which `trim()` keeps, and keeps U+FEFF (a byte-order mark), which
`trim()` removes. Mnemosyne is a Python system: its checks keep `str.strip()`."""

from __future__ import annotations

import re

JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""ECMAScript's WhiteSpace (TAB, VT, FF, ZWNBSP, and every Zs space) and LineTerminator (LF, CR,
LS, PS): what `trim()` removes."""

_JS_SPACES = re.compile(f"[{re.escape(JS_SPACE)}]+")


def js_trim(text: str) -> str:
    """`text.trim()` as JavaScript computes it."""
    return text.strip(JS_SPACE)


def js_blank(text: str) -> bool:
    """Whether JavaScript's `trim()` leaves `text` empty."""
    return not js_trim(text)


def js_squash(text: str) -> str:
    """`text.trim().split(/\\s+/).join(" ")`: each run of what `trim()` removes as one space."""
    return _JS_SPACES.sub(" ", js_trim(text))
