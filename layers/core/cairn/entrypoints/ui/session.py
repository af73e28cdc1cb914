"""Signing in to the web UI. The caller's credential (a Cairn API key, the static token, or a
token Cognito issued: cognito.py) is authenticated exactly as the `Authorization` header it
stands for, and starts a session the server keeps (auth/ui_sessions.py): the browser's HttpOnly,
SameSite=Strict cookie holds only the session's token, which the authentication middleware reads
on /ui paths. The UI is bound by the same access rule and scopes as the credential, and signing
out ends the session on the server, whoever holds a copy of the cookie.

On an open loopback server no sign-in is needed: the UI acts as the machine's owner.
"""

from __future__ import annotations

from typing import Annotated, Final
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from cairn.auth.binding import Binding
from cairn.auth.errors import INVALID_TOKEN, AuthError
from cairn.auth.principal import Principal
from cairn.auth.rate_limit import TOO_MANY_REFUSED, FailedSignIns
from cairn.auth.ui_sessions import UiSessions
from cairn.container import Container
from cairn.entrypoints.peer import client_address
from cairn.entrypoints.ui.cookie import (
    COOKIE,
    MAX_CREDENTIAL,
    drop_host_cookie,
    is_secure,
    request_session,
    set_host_cookie,
)
from cairn.entrypoints.ui.csrf import check_csrf
from cairn.entrypoints.ui.render import UiRoute, page

OPEN_PATHS: Final = ("/ui/sign-in", "/ui/sign-out", "/ui/static", "/ui/callback")
"""Served without a credential: the sign-in pages, Cognito's return, the stylesheet, and signing
out (which needs only the session's token: it works while a session's credential cannot be
checked, with the issuer's keys out of reach, and after the session has ended)."""
MAX_NEXT: Final = 2048
"""The longest page a sign-in returns to; a longer one (a long search) returns to the UI's home."""


def is_ui(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def is_open(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in OPEN_PATHS)


def sign_in_redirect(path: str, query: str, *, had_cookie: bool, secure: bool) -> Response:
    """Where a UI request without a valid credential goes. A cookie it sent that was refused is
    dropped on the way; none sent (a link followed from another site, which a Strict cookie does
    not go along with) leaves the browser's session as it is."""
    target = path + (f"?{query}" if query else "")
    if len(target) > MAX_NEXT:
        target = path if len(path) <= MAX_NEXT else "/ui"
    response = RedirectResponse(f"/ui/sign-in?next={quote(target, safe='')}", status_code=303)
    if had_cookie:
        drop_host_cookie(response, COOKIE, secure=secure)
    return response


def safe_next(target: str | None) -> str:
    """Only a path of the UI itself: never another site (an open redirect)."""
    path = urlsplit(target or "")
    if (
        target
        and len(target) <= MAX_NEXT
        and not path.scheme
        and not path.netloc
        and is_ui(path.path)
        and "\\" not in target
    ):
        return target
    return "/ui"


def session_pages(container: Container) -> APIRouter:
    router = APIRouter(route_class=UiRoute)
    authenticator = container.authenticator
    cognito = container.sign_in is not None and container.options.http.ui_client_id is not None

    @router.get("/ui/sign-in", response_class=HTMLResponse)
    def sign_in_form(request: Request, next: str | None = None) -> HTMLResponse:
        return page(
            request,
            "sign_in.html",
            title="Sign in",
            next=safe_next(next),
            cognito=cognito,
            open_server=authenticator.open,
            error=None,
        )

    @router.post("/ui/sign-in")
    def sign_in(
        request: Request,
        credential: Annotated[str, Form(max_length=MAX_CREDENTIAL)],
        csrf: Annotated[str, Form(max_length=128)] = "",
        next: Annotated[str, Form(max_length=4 * MAX_NEXT)] = "/ui",
    ) -> Response:
        check_csrf(request, csrf)
        failures: FailedSignIns | None = getattr(request.app.state, "failed_sign_ins", None)
        counted = failures if credential else None  # an empty form is no guess
        address = client_address(request.scope)
        # Held before the check: sign-ins run on worker threads at once (FailedSignIns.attempt).
        retry = counted.attempt(address) if counted is not None else None
        if retry is not None:  # not even checked, as in an Authorization header (auth_http.py)
            detail = f"{TOO_MANY_REFUSED}; retry after {retry} s"
            return PlainTextResponse(detail, status_code=429, headers={"Retry-After": str(retry)})
        guessed = False
        try:
            principal, binding = authenticator.bind(credential)
            if principal.scopes:
                return signed_in(request, container.ui_sessions, binding, principal, safe_next(next))
        except AuthError as exc:  # not accepted (an empty form among them)
            guessed = exc.code == INVALID_TOKEN and not exc.authentic
        finally:
            if counted is not None and not guessed:
                counted.returned(address)
        return page(
            request,
            "sign_in.html",
            title="Sign in",
            status=401,
            next=safe_next(next),
            cognito=cognito,
            open_server=authenticator.open,
            error="That key or token was not accepted (unknown, revoked, expired, or without a Cairn scope).",
        )

    @router.post("/ui/sign-out")
    def sign_out(request: Request, csrf: Annotated[str, Form(max_length=128)] = "") -> Response:
        check_csrf(request, csrf)
        secure = is_secure(request.scope)
        token = request_session(request)
        if token is not None:
            container.ui_sessions.end(token)
        response = RedirectResponse("/ui/sign-in", status_code=303)
        drop_host_cookie(response, COOKIE, secure=secure)
        return response

    return router


def signed_in(
    request: Request, sessions: UiSessions, binding: Binding, principal: Principal, target: str
) -> Response:
    """The browser sent on to `target` holding a new session's token; the session it held before
    (signing in again, say with another key) is ended, so no copy of its cookie outlives it. A
    sign-in is a request of its principal: past its rate limit, 429 and no session."""
    limiter = getattr(request.app.state, "rate_limiter", None)
    retry = limiter.refusal_s(principal) if limiter is not None else None
    if retry is not None:
        detail = f"too many sign-ins: retry after {retry} s"
        return PlainTextResponse(detail, status_code=429, headers={"Retry-After": str(retry)})
    session = sessions.begin(binding)
    secure = is_secure(request.scope)
    previous = request_session(request)
    if previous is not None:
        sessions.end(previous)
    response = RedirectResponse(target, status_code=303)
    set_host_cookie(response, COOKIE, session, secure=secure, max_age=12 * 3600, samesite="strict")
    return response
