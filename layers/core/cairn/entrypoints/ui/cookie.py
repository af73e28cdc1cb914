"""The web UI's session cookie: the caller's credential (a Cairn API key, the static token, or a
token Cognito issued), HttpOnly and SameSite=Strict, read on /ui paths only (ui/session.py)."""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Final

COOKIE: Final = "cairn_ui"
MAX_CREDENTIAL: Final = 8192


def cookie_credential(cookie_header: str | None) -> str | None:
    """The credential the UI cookie carries, from a raw Cookie header."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except Exception:  # a malformed Cookie header carries no credential
        return None
    morsel = jar.get(COOKIE)
    value = morsel.value if morsel is not None else ""
    return value if 0 < len(value) <= MAX_CREDENTIAL else None
