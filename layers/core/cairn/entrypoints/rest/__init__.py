"""The REST surface under /v1: brains, the Jeffs Brain store protocol, events, search, ingest."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from cairn.bootstrap import Container
from cairn.entrypoints.rest.admin import admin_router
from cairn.entrypoints.rest.ask import ask_router
from cairn.entrypoints.rest.authz import route_guard
from cairn.entrypoints.rest.batch import batch_router
from cairn.entrypoints.rest.brains import brains_router
from cairn.entrypoints.rest.documents import documents_router
from cairn.entrypoints.rest.events import events_router
from cairn.entrypoints.rest.ingest import ingest_router
from cairn.entrypoints.rest.jobs import jobs_router
from cairn.entrypoints.rest.memory import memory_router
from cairn.entrypoints.rest.problems import install_problem_handlers
from cairn.entrypoints.rest.search import search_router
from cairn.entrypoints.rest.sessions import sessions_router

__all__ = ["install_rest"]


def install_rest(app: FastAPI, container: Container) -> None:
    """Mount every /v1 router and the Problem+JSON error handlers on `app`."""
    install_problem_handlers(app)
    guard = route_guard(container.brains, container.audit)
    for router in (
        brains_router(container),
        documents_router(container),
        batch_router(container),
        ingest_router(container),
        search_router(container),
        events_router(container),
        sessions_router(container),
        ask_router(container),
        memory_router(container),
        jobs_router(container.jobs, container.brains),
        admin_router(container),
    ):
        app.include_router(router, dependencies=[Depends(guard)])
