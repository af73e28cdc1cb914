"""Templates and the UI's route class (a CairnError or bad input becomes an HTML error page with
its status, never a traceback). Every page carries the form token (csrf.py) and is never cached: it
shows private items, and a key once, and must not come back from the browser's history after a
sign-out."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.exceptions import HTTPException

from cairn import __version__
from cairn.auth import access
from cairn.auth.access import InsufficientScope
from cairn.auth.principal import ADMIN
from cairn.domain.echo import safe_echo
from cairn.domain.errors import CairnError
from cairn.entrypoints.counted_calls import CountedRoute
from cairn.entrypoints.rest.problems import STATUS_BY_CODE
from cairn.entrypoints.ui.cookie import is_secure, set_host_cookie
from cairn.entrypoints.ui.csrf import CSRF_COOKIE, csrf_token, needs_csrf_cookie
from cairn.services.brains import BrainService

PAGE_HEADERS: Final = {
    # Only our own stylesheet and script; no page of Cairn's inside another site's frame.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self' https:; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "—"


templates.filters["when"] = _when
templates.filters["ref"] = BrainService.ref_of  # a brain in a link: its slug, or its id when another tenant's


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    current = access.current()
    principal = current.principal if current else None
    body = templates.get_template(template).render(
        request=request,
        csrf=csrf_token(request),
        principal=principal,
        is_admin=principal is not None and principal.has(ADMIN),
        version=__version__,
        **context,
    )
    response = HTMLResponse(body, status_code=status, headers=PAGE_HEADERS)
    if needs_csrf_cookie(request):
        secure = is_secure(request.scope)
        set_host_cookie(
            response, CSRF_COOKIE, csrf_token(request), secure=secure, max_age=None, samesite="strict"
        )
    return response


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    """An error page; its message may quote the caller's input, said as domain/echo.py says it."""
    return page(request, "error.html", status=status, status_code=status, message=safe_echo(message))


FORM_FIELD_BYTES: Final = 64 * 1024 * 1024
"""The most one form field may take, URL-encoded (Starlette's default is 1 MB, which a note the item
page offers to edit can pass: a CJK character is 9 bytes encoded). The body cap still applies."""

FORM_TYPES: Final = ("application/x-www-form-urlencoded", "multipart/form-data")


class UiRoute(CountedRoute):
    """Every UI route: its CairnErrors, bad parameters and unreadable forms answer as pages, in the
    error's status."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                if request.headers.get("content-type", "").split(";")[0].strip().lower() in FORM_TYPES:
                    await request.form(max_part_size=FORM_FIELD_BYTES)  # kept: the handler reads it
                return await handler(request)
            except HTTPException as exc:  # a form that cannot be read (too many fields, say)
                return error_page(request, exc.status_code, str(exc.detail))
            except InsufficientScope as exc:
                return error_page(request, 403, str(exc))
            except CairnError as exc:
                return error_page(request, STATUS_BY_CODE.get(exc.code, 400), str(exc))
            except RequestValidationError as exc:
                first = exc.errors()[0] if exc.errors() else {}
                where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "input"
                return error_page(request, 400, f"{where}: {first.get('msg', 'invalid')}")

        return guarded
