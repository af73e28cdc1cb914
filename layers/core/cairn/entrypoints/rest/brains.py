"""/v1/brains: create, list, get."""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.wire import BrainList, BrainRecord


class CreateBrain(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    slug: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")
    visibility: Literal["private", "tenant", "public"] | None = None


def brains_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains", tags=["brains"])
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]

    @router.post("", status_code=201, dependencies=[Depends(require_json)])
    def create_brain(body: CreateBrain) -> BrainRecord:
        """Create a brain; the slug is derived from the name when omitted."""
        return BrainRecord.of(container.brains.create(body.name, slug=body.slug, visibility=body.visibility))

    @router.get("")
    def list_brains() -> BrainList:
        return BrainList(items=[BrainRecord.of(b) for b in container.brains.list()])

    @router.get("/{brainId}")
    def get_brain(brain: BrainArg) -> BrainRecord:
        return BrainRecord.of(brain)

    return router
