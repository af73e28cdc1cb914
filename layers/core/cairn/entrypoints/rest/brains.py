"""/v1/brains: create, list, get."""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.rest.paging import NEXT_LINK, CursorParam, announce_next
from cairn.entrypoints.rest.wire import BrainPage
from cairn.entrypoints.wire import BrainRecord
from cairn.entrypoints.wire_admin import BrainAccess, BrainAccessChange, ErasureReceipt
from cairn.services.brains import MAX_PAGE


class CreateBrain(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    slug: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")
    visibility: Literal["private", "tenant", "public"] | None = None


def brains_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains", tags=["brains"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]

    @router.post("", status_code=201, dependencies=[Depends(require_json)])
    def create_brain(request: Request, body: CreateBrain) -> BrainRecord:
        """Create a brain; the slug is derived from the name when omitted."""
        brain = container.brains.create(body.name, slug=body.slug, visibility=body.visibility)
        request.state.brain = brain  # the audit entry names what was made
        return BrainRecord.model_validate(brain)

    @router.get("", responses=NEXT_LINK)
    def list_brains(
        request: Request,
        response: Response,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size")] = MAX_PAGE,
        cursor: CursorParam = None,
    ) -> BrainPage:
        """The brains the caller may read, oldest first. Paged: while more follow, the body's
        `next_cursor` and a Link rel="next" header say so."""
        brains, after = container.brains.page(limit=limit, cursor=cursor)
        announce_next(request, response, after)
        return BrainPage(items=[BrainRecord.model_validate(b) for b in brains], next_cursor=after)

    @router.get("/{brainId}")
    def get_brain(brain: BrainArg) -> BrainRecord:
        return BrainRecord.model_validate(brain)

    @router.patch("/{brainId}", dependencies=[Depends(require_json)])
    def update_brain(brain: BrainArg, body: BrainAccessChange) -> BrainAccess:
        """Change the brain's visibility or owning subject (brains:admin on the brain)."""
        changed = container.brains.update(brain.id, visibility=body.visibility, owner=body.owner)
        return BrainAccess.model_validate(changed)

    @router.delete("/{brainId}")
    def delete_brain(brain: BrainArg) -> ErasureReceipt:
        """Delete the brain and everything it holds, on every surface (brains:admin on it: its
        owner, or an admin of its tenant for a shared one); answers once it is done, with what
        went, counted by kind. From the first moment the brain is gone for every caller."""
        return ErasureReceipt.of(container.erasure.delete_brain(brain.id))

    return router
