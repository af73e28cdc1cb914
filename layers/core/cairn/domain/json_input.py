"""JSON from a request body, refused with a clear InvalidInput when it is not what a caller can
mean: not JSON at all, nested deeper than MAX_DEPTH levels (Python's parser would otherwise blow
its recursion limit at about a thousand), holding a lone surrogate (`\\ud800` not paired:
JSON text must be Unicode, and such a string cannot be stored, hashed or sent on), or holding
NaN or Infinity (Python's parser reads them; JSON has no such numbers)."""

from __future__ import annotations

import json
import re
from typing import Any, Final

from cairn.domain.errors import InvalidInput
from cairn.domain.text import SURROGATE

MAX_DEPTH: Final = 64
"""Levels of arrays and objects a body may nest (the deepest tool argument nests 4)."""


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def loads(data: bytes | str, what: str = "request body") -> Any:
    try:  # Python's parser takes NaN and Infinity, which JSON has not: echoed, no client reads them
        value = json.loads(data, parse_constant=_not_json)
    except RecursionError:
        raise InvalidInput(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput(f"{what} is not valid JSON") from None
    check(value, what)
    return value


def check(value: Any, what: str = "request body") -> None:
    """InvalidInput when `value` (parsed JSON) nests deeper than MAX_DEPTH or holds a lone surrogate."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _unicode(node, what)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise InvalidInput(f"{what} is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            for key, inner in node.items():
                _unicode(key, what)
                stack.append((inner, depth + 1))
        else:
            stack.extend((inner, depth + 1) for inner in node)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether parsed JSON nests arrays and objects deeper than `limit` levels (strings unread)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((inner, depth + 1) for inner in children)
    return False


def _unicode(text: str, what: str) -> None:
    found = SURROGATE.search(text)
    if found is not None:
        code = f"\\u{ord(found.group()):04x}"
        raise InvalidInput(
            f"{what} holds a lone surrogate ({code}) at character {found.start()} of a string: "
            "JSON strings must be valid Unicode (pair it, or send the character itself)"
        )


_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def lone_surrogate(raw: bytes) -> tuple[int, str] | None:
    """(byte offset, escape) of the first `\\uXXXX` escape in JSON text that is half of a
    surrogate pair without its other half, None when there is none: for a parser that only says
    "unexpected end of hex escape". Every backslash escape is read in turn, so an escaped backslash
    followed by `ud800` is text, not an escape."""
    pending: tuple[int, int, str] | None = None  # a high surrogate: (start, end, escape)
    for match in _ESCAPE.finditer(raw):
        code = int(match.group(1), 16) if match.group(1) else None
        if pending is not None and not (
            code is not None and 0xDC00 <= code <= 0xDFFF and match.start() == pending[1]
        ):
            return pending[0], pending[2]
        if pending is not None:
            pending = None
            continue
        if code is not None and 0xD800 <= code <= 0xDBFF:
            pending = (match.start(), match.end(), match.group().decode())
        elif code is not None and 0xDC00 <= code <= 0xDFFF:
            return match.start(), match.group().decode()
    return (pending[0], pending[2]) if pending is not None else None
