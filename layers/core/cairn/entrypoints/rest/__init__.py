"""The REST surface under /v1: brains, the Jeffs Brain store protocol, events, search, ingest."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, FastAPI
from starlette.types import Scope

from cairn.container import Container
from cairn.entrypoints.rest.admin import admin_router
from cairn.entrypoints.rest.archive import ARCHIVE_IMPORT, archive_router
from cairn.entrypoints.rest.ask import ask_router
from cairn.entrypoints.rest.authz import route_audit
from cairn.entrypoints.rest.batch import batch_router
from cairn.entrypoints.rest.brains import brains_router
from cairn.entrypoints.rest.documents import documents_router
from cairn.entrypoints.rest.erasure import erasure_router
from cairn.entrypoints.rest.events import events_router
from cairn.entrypoints.rest.ingest import ingest_router
from cairn.entrypoints.rest.jobs import jobs_router
from cairn.entrypoints.rest.memory import memory_router
from cairn.entrypoints.rest.openapi import install_openapi
from cairn.entrypoints.rest.problems import install_problem_handlers
from cairn.entrypoints.rest.search import search_router
from cairn.entrypoints.rest.sessions import sessions_router
from cairn.entrypoints.rest.uploads import uploads_router
from cairn.entrypoints.rest.zengram.routes import zengram_router
from cairn.options import Limits

__all__ = ["body_limit", "install_rest"]

# Routes that read their bodies themselves, under caps of their own (rest/body.py read_capped,
# rest/ingest.py): store writes and appends (max_put_bytes), rename, batch-ops (the base64 of
# max_batch_bytes) and file upload (max_file_bytes, answered `file_too_large`).
SELF_CAPPED = (
    ("PUT", "/documents"),
    ("POST", "/documents/append"),
    ("POST", "/documents/rename"),
    ("POST", "/documents/batch-ops"),
    ("POST", "/documents/ingest/file"),
)


def install_rest(app: FastAPI, container: Container) -> None:
    """Mount every /v1 router, the Problem+JSON error handlers and the OpenAPI corrections on `app`."""
    install_problem_handlers(app)
    install_openapi(app)
    audited = route_audit(container.brains, container.audit)
    for router in (
        brains_router(container),
        documents_router(container),
        batch_router(container),
        ingest_router(container),
        uploads_router(container),
        search_router(container),
        events_router(container),
        sessions_router(container),
        ask_router(container),
        memory_router(container),
        jobs_router(container.job_status),
        admin_router(container),
        erasure_router(container.erasure),
        archive_router(container),
    ):
        app.include_router(router, dependencies=[Depends(audited)])
    # zengram's API checks its own scopes per route (rest/zengram/routes.py) and answers its own errors.
    app.include_router(zengram_router(container.zengram, container.audit))


def body_limit(limits: Limits) -> Callable[[Scope], int | None]:
    """The request body cap of entrypoints/body_limit.py: the JSON cap everywhere, but none for
    the routes that keep their own caps and answer their own 413s."""
    cap = limits.json_body_limit

    def limit(scope: Scope) -> int | None:
        path, method = scope.get("path", ""), scope.get("method")
        if path.startswith("/v1/brains/") and any(
            method == m and path.endswith(suffix) for m, suffix in SELF_CAPPED
        ):
            return None
        if method == "POST" and path == ARCHIVE_IMPORT:  # capped by the route (rest/archive.py)
            return None
        return cap

    return limit
