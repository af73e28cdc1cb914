"""The web UI's session cookie: the token of a session the server keeps (auth/ui_sessions.py),
never the credential it signed in with; HttpOnly and SameSite=Strict, read on /ui paths only
(ui/session.py)."""

from __future__ import annotations

from typing import Final

from starlette.requests import cookie_parser

COOKIE: Final = "cairn_ui"
MAX_CREDENTIAL: Final = 8192
"""The longest credential the sign-in form takes, and the longest cookie value read."""


def session_token(cookie_header: str | None) -> str | None:
    """What the UI cookie carries, from a raw Cookie header: a session's token, or anything else
    a browser kept there (refused, and dropped, by the authentication middleware). Starlette's
    parser reads every cookie in one pass and steps over those it cannot read, which another
    app on another localhost port may set; the standard library's stops at the first, and takes
    time quadratic in the header's length on Python before 3.11.10."""
    if not cookie_header:
        return None
    value = cookie_parser(cookie_header).get(COOKIE, "")
    return value if 0 < len(value) <= MAX_CREDENTIAL else None
