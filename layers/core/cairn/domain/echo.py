"""What an error answer may say of a caller's input: the one rule every surface's errors follow.

Messages quote what the caller sent (`no brain matches '<arg>'`, an unknown tool's or field's name,
a path). Answers are printed by `cairn` and clients in terminals and logged by proxies, so what is
quoted is made safe once, here: a credential domain/scrub.py recognises is replaced by its marker
(a key pasted in the wrong field is not sent back to be logged again), a control character (an
ANSI escape, CR/LF, NUL), a bidirectional control and a lone surrogate are written as their
escapes, and a message past its bound is cut, marked with the length it had.
"""

from __future__ import annotations

import re

from cairn.domain.scrub import scrub

MESSAGE_CHARS = 1000
"""The most an error message says: a quote of the caller's input never makes an answer grow with it."""

_SCRUBBED_CHARS = 4 * MESSAGE_CHARS
"""What of a longer text is scrubbed before it is cut: the scrub's cost stays bounded, and what lies
past it is cut away whatever it holds."""

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL and C1 controls: ESC starts an ANSI sequence, CR/LF forge lines
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional controls ("Trojan Source")
    "\u2028\u2029"  # line and paragraph separators, which some viewers break lines at
    "\ud800-\udfff]"  # a lone surrogate, which no encoder can write
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_echo(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text`, a message that may quote a caller's input, as an answer may say it: credentials
    scrubbed, unsafe characters escaped (`\\x1b`, `\\u202e`), and at most `limit` characters, cut
    with `… (N characters)` naming its length before. A plain message comes back unchanged."""
    if len(text) <= limit and _UNSAFE.search(text) is None and scrub(text) == text:
        return text
    size = len(text)
    said = _UNSAFE.sub(_escaped, scrub(text[:_SCRUBBED_CHARS]))
    if size <= limit and len(said) <= limit:
        return said
    return f"{said[:limit]}… ({size} characters)"
