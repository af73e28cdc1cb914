"""POST /v1/brains/{brainId}/search: hybrid search, the same service memory_search uses."""

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from cairn.container import Container
from cairn.domain.models import Brain
from cairn.domain.moments import iso_moment
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.wire import SearchResponse
from cairn.services.search.as_of import AsOf
from cairn.services.search.service import SortMode

Moment = Annotated[datetime, BeforeValidator(iso_moment)]
"""ISO 8601 text only (a number is not taken for seconds since 1970), in UTC."""


class SearchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4096)
    top_k: int = Field(default=10, ge=1, le=100)
    scope: Literal["all", "global", "project", "agent"] | None = None
    sort: SortMode = "relevance"
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=64
    )
    path_prefix: str | None = Field(default=None, min_length=1, max_length=1024)
    valid_at: Moment | None = Field(
        default=None,
        description="ISO 8601 (no offset: UTC). What was true then: typed memories valid at that moment, "
        "superseded since or not, one value a fact key or status subject.",
    )
    known_at: Moment | None = Field(
        default=None,
        description="ISO 8601 (no offset: UTC). What Cairn knew then: what was recorded by that moment and "
        "not yet superseded then; with valid_at, what Cairn then held to be true at valid_at.",
    )

    def as_of(self) -> AsOf:
        return AsOf(valid_at=self.valid_at, known_at=self.known_at)


def search_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}", tags=["search"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]

    @router.post("/search", dependencies=[Depends(require_json)])
    def search(brain: BrainArg, body: SearchBody) -> SearchResponse:
        """Search a brain's documents; `scope` selects a memory namespace, `sort` relevance or recency,
        `valid_at` and `known_at` a moment of the past (what was true then, what Cairn knew then;
        without them, current memories only). Each hit names its brain by id (`brain_id`) and slug
        (`brain`)."""
        result = container.search.search(
            brain,
            body.query,
            top_k=body.top_k,
            scope=body.scope,
            sort=body.sort,
            tags=body.tags,
            path_prefix=body.path_prefix,
            as_of=body.as_of(),
        )
        return SearchResponse.of(result, brain.slug)

    return router
