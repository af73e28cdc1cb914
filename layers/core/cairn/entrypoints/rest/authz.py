"""The scope each /v1 route needs, in one table; a route missing from it is refused (fail closed).

Every /v1 route is a `ScopedRoute`, whose handler checks the scope and declares it for the
request's context before FastAPI reads and decodes the request, so a caller without it gets 403
even when its request is otherwise malformed (FastAPI parses a JSON body before it runs any
dependency). The brain itself is checked where it is resolved (BrainService.get,
auth/access.py). `route_audit`, a dependency of every /v1 router, records a route that needs
documents:write or brains:admin and succeeds in the audit log, as its work returns and before its
answer is sent (entrypoints/counted_calls.py `settle_with`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from fastapi import Request
from starlette.responses import Response

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE
from cairn.domain.errors import CairnError
from cairn.domain.models import Brain
from cairn.entrypoints.counted_calls import CountedRoute, settle_with
from cairn.services.audit import AuditLog
from cairn.services.brains import BrainService

log = logging.getLogger("cairn.audit")

B = "/v1/brains/{brainId}"
S = f"{B}/sessions/{{sessionId}}"

ROUTE_SCOPES: dict[tuple[str, str], str] = {
    ("GET", "/v1/brains"): READ,
    ("POST", "/v1/brains"): ADMIN,
    ("GET", B): READ,
    ("PATCH", B): ADMIN,
    ("DELETE", B): ADMIN,
    ("GET", f"{B}/documents/read"): READ,
    ("GET", f"{B}/documents"): READ,
    ("HEAD", f"{B}/documents"): READ,
    ("GET", f"{B}/documents/stat"): READ,
    ("PUT", f"{B}/documents"): WRITE,
    ("POST", f"{B}/documents"): WRITE,
    ("DELETE", f"{B}/documents"): WRITE,
    ("POST", f"{B}/documents/append"): WRITE,
    ("POST", f"{B}/documents/rename"): WRITE,
    ("POST", f"{B}/documents/batch-ops"): WRITE,
    ("POST", f"{B}/documents/ingest/file"): WRITE,
    ("POST", f"{B}/documents/ingest/url"): WRITE,
    ("POST", f"{B}/documents/uploads"): WRITE,
    ("POST", f"{B}/documents/ingest/upload"): WRITE,
    ("POST", f"{B}/search"): READ,
    ("GET", f"{B}/events"): READ,
    ("POST", f"{B}/sessions"): WRITE,
    ("POST", f"{S}/messages"): WRITE,
    ("GET", S): READ,
    ("POST", f"{S}/recall"): READ,
    ("POST", f"{S}/close"): WRITE,
    ("POST", f"{B}/ask"): READ,
    ("POST", f"{B}/extract"): WRITE,
    ("POST", f"{S}/reflect"): WRITE,
    ("POST", f"{B}/consolidate"): WRITE,
    ("GET", "/v1/jobs/{jobId}"): READ,
    ("POST", "/v1/admin/keys"): ADMIN,
    ("GET", "/v1/admin/keys"): ADMIN,
    ("DELETE", "/v1/admin/keys/{keyId}"): ADMIN,
    ("GET", "/v1/admin/audit"): ADMIN,
    ("POST", "/v1/erasures"): ADMIN,
    ("GET", "/v1/erasures/{erasureId}"): ADMIN,
    ("POST", "/v1/archive/import"): WRITE,  # creating the brain needs brains:admin (BrainService)
}


def route_scope(method: str, template: str) -> tuple[str, str | None]:
    """The method a route's scope is declared under (HEAD as GET where HEAD declares none) and
    that scope, None when the table has none."""
    if method == "HEAD" and ("HEAD", template) not in ROUTE_SCOPES:
        method = "GET"
    return method, ROUTE_SCOPES.get((method, template))


class ScopedRoute(CountedRoute):
    """A /v1 route: its scope is checked and declared before anything of the request is read."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler, template = super().get_route_handler(), self.path_format

        async def scoped(request: Request) -> Response:
            _, needed = route_scope(request.method, template)
            if needed is not None:
                access.set_scope(needed)  # InsufficientScope when the principal lacks it
            elif access.current() is not None:
                raise access.InsufficientScope(None)
            return await handler(request)

        return scoped


def route_audit(brains: BrainService, audit: AuditLog) -> Callable[[Request], AsyncIterator[None]]:
    async def audited(request: Request) -> AsyncIterator[None]:
        """Record the route in the audit log when it needs more than documents:read and succeeds
        (ScopedRoute has checked and declared its scope)."""
        route = request.scope.get("route")
        template = str(getattr(route, "path_format", None) or getattr(route, "path", ""))
        method, scope = route_scope(request.method, template)
        current = access.current()
        if scope in (None, READ) or current is None:
            yield
            return

        once = threading.Lock()

        def record() -> None:
            if not once.acquire(blocking=False):  # recorded already
                return
            name = getattr(route, "name", None) or "route"
            detail = {"route": f"{method} {template}"}
            try:
                audit.record(current.principal, f"rest.{name}", detail=detail, **_subject(request, brains))
            except CairnError:  # the mutation happened; say so loudly rather than fail its response
                log.exception("audit record failed for %s %s", method, template)

        # Done by the route's work itself as it succeeds, before its answer goes out (a cancel then
        # cannot lose it), or, the stop having cut the call short, when that work ends.
        settle_with(record)
        yield
        record()  # a route whose work settled nothing (a stream's): once it answered

    return audited


def _subject(request: Request, brains: BrainService) -> dict[str, Any]:
    """The brain (by id) and the path, session or key the request acted on."""
    params = request.path_params
    brain = getattr(request.state, "brain", None)  # resolved by the route's brain dependency
    brain_id = brain.id if isinstance(brain, Brain) else None
    if brain_id is None and "brainId" in params:
        try:
            brain_id = brains.get(str(params["brainId"])).id
        except CairnError:
            brain_id = str(params["brainId"])
    made = getattr(request.state, "audit_target", None)  # what the route created (a key's id)
    target = made or request.query_params.get("path") or params.get("sessionId") or params.get("keyId")
    return {"brain_id": brain_id, "target": str(target) if target else None}
