"""Signing in to the web UI with a user pool account (Cognito on AWS): the OAuth 2.1 authorization
code flow with PKCE (S256) as a public client (`container.options.http.ui_client_id`, no secret).

`GET /ui/sign-in/cognito?next=…` sends the browser to the pool's authorize endpoint, keeping the
state, the code verifier and where to go afterwards in a short-lived HttpOnly cookie (SameSite=Lax:
the pool sends the browser back with a top-level GET from its own site, which a Strict cookie would
miss). `GET /ui/callback?code&state` checks the state, exchanges the code at the token endpoint and
starts a UI session for the access token once the authenticator accepts it (session.py), so the
user's scopes and tenant come from the same JWT rules as the API's, until the token expires. Every
failure is a page that says what happened; none echoes the code, a token or the verifier.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from html import escape
from typing import Final
from urllib.parse import urlencode

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from cairn.auth.errors import UNAVAILABLE, AuthError
from cairn.auth.principal import SCOPES
from cairn.container import Container
from cairn.entrypoints.ui.cookie import (
    COOKIE,
    drop_host_cookie,
    is_secure,
    named,
    request_session,
    set_host_cookie,
)
from cairn.entrypoints.ui.render import PAGE_HEADERS, UiRoute, error_page, page
from cairn.entrypoints.ui.session import safe_next, signed_in

FLOW_COOKIE: Final = "cairn_ui_signin"
CALLBACK: Final = "/ui/callback"
FLOW_TTL_S: Final = 600
"""How long a sign-in may take between leaving for the pool's page and coming back."""
TOKEN_TIMEOUT_S: Final = 10.0
_ERROR_CODE = re.compile(r"^[a-z_]{1,64}$")
_DENIED: Final = {
    "access_denied": "The sign-in was cancelled or refused.",
    "unauthorized_client": "This app client may not sign users in with the authorization code flow.",
    "invalid_scope": "The user pool does not offer the scopes the UI asked for.",
    "invalid_request": "The user pool refused the sign-in request.",
    "server_error": "The sign-in service failed.",
    "temporarily_unavailable": "The sign-in service is busy.",
}


def cognito_pages(container: Container, http: httpx.Client | None = None) -> APIRouter:
    """`http`: the client the code is exchanged with (a test's); default one with a short timeout."""
    router = APIRouter(route_class=UiRoute)
    sign_in, options = container.sign_in, container.options.http
    client_id = options.ui_client_id
    authenticator = container.authenticator
    prefix = options.jwt_scope_prefix or ""
    client = http or httpx.Client(timeout=TOKEN_TIMEOUT_S, follow_redirects=False)

    def refused(
        request: Request, status: int, message: str, target: str = "/ui", *, keep_flow: bool = False
    ) -> Response:
        response = page(
            request,
            "sign_in.html",
            title="Sign in",
            status=status,
            next=target,
            cognito=sign_in is not None and client_id is not None,
            open_server=authenticator.open,
            error=message,
        )
        if not keep_flow:
            _forget_flow(response, secure=is_secure(request.scope))
        _no_store(response)
        return response

    @router.get("/ui/sign-in/cognito")
    def start(request: Request, next: str | None = None) -> Response:
        if sign_in is None or not client_id:
            return error_page(
                request, 404, "Signing in with a Cairn account is not configured on this server."
            )
        endpoints = sign_in.endpoints
        state, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(48)
        target = safe_next(next)
        scopes = [
            "openid",
            *(s for s in endpoints.scopes if s.removeprefix(prefix) in SCOPES and s != "openid"),
        ]
        query = urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": _redirect_uri(request, options.public_url),
                "scope": " ".join(scopes),
                "state": state,
                "code_challenge": _s256(verifier),
                "code_challenge_method": "S256",
            }
        )
        response = RedirectResponse(f"{endpoints.authorize}?{query}", status_code=303)
        flow = ".".join((state, verifier, base64.urlsafe_b64encode(target.encode()).decode().rstrip("=")))
        secure = is_secure(request.scope)
        set_host_cookie(response, FLOW_COOKIE, flow, secure=secure, max_age=FLOW_TTL_S, samesite="lax")
        # Signing in again ends the browser's session now: the pool sends the browser back with a
        # cross-site navigation, which does not carry the Strict session cookie to the callback.
        # Only when the user asked for it here (typed, or this site's own link): an image on a
        # sibling site's page sends the same GET, and must not sign the user out.
        previous = request_session(request)
        asked_here = request.headers.get("sec-fetch-site", "none") in ("none", "same-origin")
        if previous is not None and asked_here:
            container.ui_sessions.end(previous)
            drop_host_cookie(response, COOKIE, secure=secure)
        _no_store(response)
        return response

    @router.get(CALLBACK)
    def callback(
        request: Request,
        code: str | None = None,
        state: str | None = None,
        error: str | None = None,
    ) -> Response:
        if sign_in is None or not client_id:
            return error_page(
                request, 404, "Signing in with a Cairn account is not configured on this server."
            )
        flow = _flow(request.cookies.get(named(FLOW_COOKIE, is_secure(request.scope))))
        target = flow[2] if flow else "/ui"
        if flow is None or not state or not hmac.compare_digest(flow[0].encode(), state.encode()):
            # not this browser's sign-in coming back (another page can send it here): the one in
            # progress, if any, stays
            return refused(
                request,
                400,
                "This sign-in could not be matched to this browser: it expired, was already used, or "
                "was started in another browser. Try again.",
                target,
                keep_flow=True,
            )
        if error is not None:
            known = _DENIED.get(error)
            said = f" ({error})" if _ERROR_CODE.fullmatch(error) else ""
            message = known or f"The sign-in did not complete{said}."
            return refused(request, 400 if error != "access_denied" else 401, f"{message} Try again.", target)
        if not code or len(code) > 2048:
            return refused(
                request, 400, "The sign-in came back without an authorization code. Try again.", target
            )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": _redirect_uri(request, options.public_url),
            "client_id": client_id,
            "code_verifier": flow[1],
        }
        try:
            answer = client.post(sign_in.endpoints.token, data=form, headers={"Accept": "application/json"})
        except httpx.TimeoutException:
            return refused(request, 504, "The sign-in service did not answer in time. Try again.", target)
        except httpx.HTTPError:
            return refused(request, 502, "The sign-in service could not be reached. Try again.", target)
        token = _access_token(answer)
        if token is None:
            reason = _token_error(answer)
            # a 400 refuses the code itself (used already, forged, expired): the caller's; else the service's
            status = 400 if answer.status_code == 400 else 502
            return refused(
                request, status, f"The sign-in service did not issue a token{reason}. Try again.", target
            )
        try:
            principal, binding = authenticator.bind(token)
        except AuthError as exc:
            if exc.code == UNAVAILABLE:
                return refused(request, 503, "Cairn cannot check the token right now. Try again.", target)
            return refused(request, 401, f"Cairn did not accept the token: {exc.reason}.", target)
        if not principal.scopes:
            return refused(
                request,
                403,
                "Signed in, but this account has no Cairn scope: an administrator adds it to a group "
                f"({', '.join(SCOPES)}).",
                target,
            )
        landed = signed_in(request, container.ui_sessions, binding, principal, safe_next(target))
        return _landing(landed, secure=is_secure(request.scope))

    return router


def _redirect_uri(request: Request, public_url: str | None) -> str:
    from cairn.entrypoints import auth_http  # here: auth_http imports this package (ui.session)

    headers = {k.lower(): v for k, v in request.headers.items()}
    return f"{auth_http.base_url(request.scope, headers, public_url)}{CALLBACK}"


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _flow(cookie: str | None) -> tuple[str, str, str] | None:
    """The state, the verifier and the page to go to, from the flow cookie."""
    if not cookie or len(cookie) > 4096:
        return None
    parts = cookie.split(".")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        return None
    try:
        target = base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4)).decode()
    except ValueError:
        return None
    return parts[0], parts[1], safe_next(target)


def _access_token(answer: httpx.Response) -> str | None:
    if answer.status_code != 200:
        return None
    try:
        body = answer.json()
    except ValueError:
        return None
    token = body.get("access_token") if isinstance(body, dict) else None
    kind = body.get("token_type", "Bearer") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token or not isinstance(kind, str) or kind.lower() != "bearer":
        return None
    return token if token.isascii() and token.isprintable() and " " not in token else None


def _token_error(answer: httpx.Response) -> str:
    """The OAuth error code of a refusal (`invalid_grant`, …) when it has one: never its description."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str) and _ERROR_CODE.fullmatch(error):
        return f" ({error})"
    return f" (HTTP {answer.status_code})"


def _landing(redirect: Response, *, secure: bool) -> Response:
    """The signed-in answer as a page that moves on by itself. The session cookie is SameSite=Strict,
    and a browser does not send it on a redirect that a cross-site navigation (the pool's page
    sending the user back) started; a navigation this page starts is same-site, so it is sent."""
    target = escape(redirect.headers["location"], quote=True)
    body = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="refresh" content="0;url={target}"><title>Signed in · Cairn</title></head>'
        f'<body><p>Signed in. <a href="{target}">Continue</a>.</p></body></html>'
    )
    response = HTMLResponse(body, headers=PAGE_HEADERS)
    for name, value in redirect.raw_headers:
        if name.lower() == b"set-cookie":
            response.raw_headers.append((name, value))
    _forget_flow(response, secure=secure)
    _no_store(response)
    return response


def _forget_flow(response: Response, *, secure: bool) -> None:
    drop_host_cookie(response, FLOW_COOKIE, secure=secure)


def _no_store(response: Response) -> None:
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
