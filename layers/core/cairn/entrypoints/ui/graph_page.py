"""/ui/brains/{ref}/items/{doc_id}/graph: the links around an item, a few hops deep, as SVG."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from cairn.auth import access
from cairn.entrypoints.ui.deps import READ, UiDeps
from cairn.entrypoints.ui.graph_svg import SIZE, layout, short
from cairn.entrypoints.ui.render import UiRoute, page
from cairn.services.explorer.neighbourhood import MAX_HOPS


def graph_page(deps: UiDeps) -> APIRouter:
    router = APIRouter(route_class=UiRoute)

    @router.get("/ui/brains/{ref}/items/{doc_id}/graph", response_class=HTMLResponse)
    def graph(
        request: Request, ref: str, doc_id: str, hops: Annotated[int, Query(ge=1, le=MAX_HOPS)] = 2
    ) -> HTMLResponse:
        brain = deps.brain(ref)
        with access.needing(READ):
            root = deps.details.item(brain, doc_id)
            found = deps.graphs.around(brain, doc_id, hops)
        placed = layout(found)
        return page(
            request,
            "graph.html",
            brain=brain,
            root=root,
            graph=found,
            placed=placed,
            size=SIZE,
            hops=hops,
            max_hops=MAX_HOPS,
            short=short,
            title=f"Graph: {root.title or root.path}",
        )

    return router
