"""The check every UI form post passes, against a page of another site or of another server on the
same machine submitting a form through the user's browser.

- Where it was sent from: a browser names the page's origin (`Origin`) and how it relates to the
  target (`Sec-Fetch-Site`). A form post must come from this very origin, host and port: a page on
  another port of localhost, or on a sibling subdomain, is the same *site* (so a SameSite cookie
  goes along) but not the same origin.
- A token only a page of this UI can know: with a session, one derived from the session's
  token (which the HttpOnly cookie keeps from any script), so a token cookie planted by a
  sibling host or another localhost port (cookies ignore ports) buys nothing; without one (the
  sign-in form, an open loopback server), a random token in a cookie, echoed by the form. A
  session cookie planted the same way is the planter's own session, whose token the planter can
  derive too: against that form post, the origin check above is what holds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Final
from urllib.parse import urlsplit

from fastapi import Request

from cairn.domain.authority import authority_host
from cairn.domain.errors import Forbidden
from cairn.entrypoints.ui.cookie import is_secure, named, request_session

CSRF_COOKIE: Final = "cairn_csrf"
SAME_ORIGIN: Final = ("same-origin", "none")  # Sec-Fetch-Site values of our own pages and of the user
STALE: Final = "the form is stale or came from another site: reload the page and try again"


def csrf_token(request: Request) -> str:
    session = request_session(request)
    if session is not None:
        return _bound(session)
    token = _token_cookie(request)
    if token and len(token) == 43:
        return token
    cached = getattr(request.state, "csrf", None)
    if cached is None:
        cached = secrets.token_urlsafe(32)
        request.state.csrf = cached
    return str(cached)


def needs_csrf_cookie(request: Request) -> bool:
    """Whether the page must set the token cookie (no session to derive the token from)."""
    return request_session(request) is None and _token_cookie(request) != csrf_token(request)


def check_csrf(request: Request, sent: str | None) -> None:
    if not _same_origin(request):
        raise Forbidden("forms of this UI are accepted from its own pages only")
    expected = csrf_token(request)
    session = request_session(request)
    if session is None and _token_cookie(request) != expected:
        raise Forbidden(STALE)
    if not sent or not hmac.compare_digest(expected.encode(), sent.encode()):
        raise Forbidden(STALE)


def _token_cookie(request: Request) -> str | None:
    return request.cookies.get(named(CSRF_COOKIE, is_secure(request.scope)))


def _bound(session: str) -> str:
    digest = hmac.new(b"cairn-ui-csrf", session.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _same_origin(request: Request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in SAME_ORIGIN:
        return False
    origin = request.headers.get("origin")
    if origin is None:  # every browser names it on a form post; other clients forge nothing
        return True
    sender = _authority(origin)
    own = {_authority(f"//{request.headers.get('host', '')}")}
    public = getattr(request.app.state, "ui_public_origin", None)
    if public:
        own.add(_authority(public))
    return sender is not None and sender in own


def _authority(origin: str) -> str | None:
    """`host[:port]` of an origin or of `//` and a Host header, lowercased, a default port dropped
    (a proxy ending TLS in front of the server sees the page's https origin on an http request)."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    host = authority_host(parts.netloc)  # None for more than a host and a port: `[::1].evil.example`
    if parts.scheme not in ("http", "https", "") or host is None or parts.path not in ("", "/"):
        return None
    return host + (f":{port}" if port not in (None, 80, 443) else "")
