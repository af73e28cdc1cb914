"""The web UI at /ui: server-rendered pages (Jinja2 templates, plain HTML forms, a few lines of our
own script for live job progress) over the same services and the same access rule as every surface.

Modules: session.py (signing in: a credential kept in a cookie, cookie.py, or Cognito on AWS),
csrf.py (where a form post may come from, and its token), render.py (templates, errors as pages),
one module per page group (brains, items, search, graph, admin: jobs, gaps, keys, erasure),
graph_svg.py (laying a graph out as SVG).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from cairn.container import Container
from cairn.entrypoints.ui.admin_pages import admin_pages
from cairn.entrypoints.ui.brain_pages import brain_pages
from cairn.entrypoints.ui.cognito import cognito_pages
from cairn.entrypoints.ui.deps import UiDeps
from cairn.entrypoints.ui.graph_page import graph_page
from cairn.entrypoints.ui.item_pages import item_pages
from cairn.entrypoints.ui.search_page import search_page
from cairn.entrypoints.ui.session import session_pages

UI = "/ui"


def install_ui(app: FastAPI, container: Container) -> None:
    # API Gateway routes no /docs to the function: the header links to it only where it is served.
    app.state.ui_api_docs = not container.options.http.on_aws
    app.state.ui_public_origin = container.options.http.public_url  # a form's Origin through a proxy
    app.mount(f"{UI}/static", StaticFiles(directory=Path(__file__).parent / "static"), name="ui-static")
    deps = UiDeps.of(container)
    for router in (
        session_pages(container),
        cognito_pages(container),
        brain_pages(deps),
        item_pages(deps),
        search_page(deps),
        graph_page(deps),
        admin_pages(deps),
    ):
        app.include_router(router, include_in_schema=False)
