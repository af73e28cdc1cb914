"""/ui/brains/{ref}/search: the retrieval pipeline every surface uses, with what each leg gave each
result and why it ranked where it did, now or at a moment of the past (`valid_at`: what was true
then; `known_at`: what Cairn knew then). A search made here is not counted as an access: a person
looking must not change what agents' searches rank."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from cairn.auth import access
from cairn.domain.errors import InvalidInput
from cairn.domain.moments import iso_moment
from cairn.entrypoints.ui.deps import READ, UiDeps
from cairn.entrypoints.ui.render import UiRoute, page
from cairn.services.search.as_of import AsOf
from cairn.services.search.service import SearchHit


def why(position: int, hit: SearchHit) -> str:
    """One sentence on a result's place: which legs found it, what ordered it, what its score says."""
    c = hit.component_scores
    legs = []
    if c.get("bm25_rank") is not None:
        legs.append(f"keyword match #{c['bm25_rank']}")
    if c.get("vector_rank") is not None:
        legs.append(f"meaning match #{c['vector_rank']}")
    found = " and ".join(legs) or "neither leg (kept for its document)"
    order = f"re-ranked to #{position}" if c.get("rerank") is not None else f"#{position} by the legs' blend"
    relevance = float(c.get("relevance") or 0.0)
    verdict = (
        "a strong match"
        if relevance >= 0.5
        else "a partial match"
        if relevance >= 0.2
        else "probably unrelated"
    )
    return f"Found as {found}; {order}. Calibrated relevance {relevance:.2f}: {verdict}."


def _moment(text: str, name: str) -> datetime | None:
    """A moment typed in the form (ISO 8601, or a browser's date and time), or None when blank."""
    if not text.strip():
        return None
    try:
        return iso_moment(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a date or an ISO 8601 time, such as 2025-06-01T09:30") from None


def search_page(deps: UiDeps) -> APIRouter:
    router = APIRouter(route_class=UiRoute)
    container = deps.container

    @router.get("/ui/brains/{ref}/search", response_class=HTMLResponse)
    def search(
        request: Request,
        ref: str,
        q: Annotated[str, Query(max_length=2000)] = "",
        top_k: Annotated[int, Query(ge=1, le=50)] = 10,
        valid_at: Annotated[str, Query(max_length=64)] = "",
        known_at: Annotated[str, Query(max_length=64)] = "",
    ) -> HTMLResponse:
        brain = deps.brain(ref)
        result = None
        explained: list[tuple[SearchHit, str]] = []
        as_of = AsOf(valid_at=_moment(valid_at, "valid_at"), known_at=_moment(known_at, "known_at"))
        if q.strip():
            with access.needing(READ):
                result = container.search.search(brain, q, top_k=top_k, count_access=False, as_of=as_of)
            explained = [(h, why(i, h)) for i, h in enumerate(result.hits, start=1)]
        return page(
            request,
            "search.html",
            brain=brain,
            q=q,
            top_k=top_k,
            valid_at=valid_at,
            known_at=known_at,
            result=result,
            explained=explained,
            title="Search",
        )

    return router
