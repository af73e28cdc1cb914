"""The web UI's session cookie: the token of a session the server keeps (auth/ui_sessions.py),
never the credential it signed in with; HttpOnly and SameSite=Strict, read on /ui paths only
(ui/session.py)."""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Final

COOKIE: Final = "cairn_ui"
MAX_CREDENTIAL: Final = 8192
"""The longest credential the sign-in form takes."""
MAX_TOKEN: Final = 128


def session_token(cookie_header: str | None) -> str | None:
    """The session token the UI cookie carries, from a raw Cookie header."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except Exception:  # a malformed Cookie header carries no session
        return None
    morsel = jar.get(COOKIE)
    value = morsel.value if morsel is not None else ""
    return value if 0 < len(value) <= MAX_TOKEN else None
