"""The web UI's session cookie: the token of a session the server keeps (auth/ui_sessions.py),
never the credential it signed in with; HttpOnly and SameSite=Strict, read on /ui paths only
(ui/session.py).

Served over HTTPS, the UI's cookies are named with the `__Host-` prefix: a browser takes such a
cookie only when it is Secure, for path `/` and from this very host, so a page of a sibling
subdomain cannot plant its own session in the user's browser (cookie tossing: the user would then
act, unawares, as the planter). Over plain HTTP (a loopback server) no prefix is possible, and
another server on another port of the same host can set cookies for it: the form checks
(ui/csrf.py) are what hold there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from starlette.requests import Request, cookie_parser
from starlette.responses import Response

COOKIE: Final = "cairn_ui"
MAX_CREDENTIAL: Final = 8192
"""The longest credential the sign-in form takes, and the longest cookie value read."""


HOST_ONLY: Final = "__Host-"


def is_secure(scope: Mapping[str, Any]) -> bool:
    """Whether the request came over HTTPS (the ASGI scope's scheme; under Mangum, API Gateway's)."""
    return scope.get("scheme") == "https"


def named(name: str, secure: bool) -> str:
    """A UI cookie's name on the wire: `__Host-` prefixed over HTTPS."""
    return f"{HOST_ONLY}{name}" if secure else name


def set_host_cookie(
    response: Response,
    name: str,
    value: str,
    *,
    secure: bool,
    max_age: int | None,
    samesite: Literal["strict", "lax"],
) -> None:
    """A cookie of this host alone: HttpOnly, path `/`, Secure and `__Host-` named over HTTPS."""
    response.set_cookie(
        named(name, secure), value, max_age=max_age, path="/", httponly=True, samesite=samesite, secure=secure
    )


def drop_host_cookie(response: Response, name: str, *, secure: bool) -> None:
    """Tells the browser to forget the cookie (a `__Host-` one must be dropped as Secure too)."""
    response.delete_cookie(named(name, secure), path="/", secure=secure, httponly=True)


def request_session(request: Request) -> str | None:
    """What the request's UI cookie carries (`session_token` over its Cookie header and scheme)."""
    return session_token(request.headers.get("cookie"), secure=is_secure(request.scope))


def session_token(cookie_header: str | None, *, secure: bool) -> str | None:
    """What the UI cookie carries, from a raw Cookie header: a session's token, or anything else
    a browser kept there (refused, and dropped, by the authentication middleware). Starlette's
    parser reads every cookie in one pass and steps over those it cannot read, which another
    app on another localhost port may set; the standard library's stops at the first, and takes
    time quadratic in the header's length on Python before 3.11.10."""
    if not cookie_header:
        return None
    value = cookie_parser(cookie_header).get(named(COOKIE, secure), "")
    return value if 0 < len(value) <= MAX_CREDENTIAL else None
