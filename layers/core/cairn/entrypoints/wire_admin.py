"""Who a brain belongs to, as the operator's REST route, admin MCP surface and CLI show it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.domain.models import Brain
from cairn.entrypoints.wire import Timestamp, Wire
from cairn.services.brains import PRINCIPAL_NAME

Principal = Annotated[str, Field(min_length=1, max_length=128, pattern=PRINCIPAL_NAME.pattern)]


class BrainAccess(Wire):
    id: str
    slug: str
    name: str
    visibility: Literal["private", "tenant", "public"]
    owner_tenant: str
    owner: str | None
    updated_at: Timestamp

    @classmethod
    def of(cls, brain: Brain) -> BrainAccess:
        return cls(
            id=brain.id,
            slug=brain.slug,
            name=brain.name,
            visibility=brain.visibility.value,
            owner_tenant=brain.owner_tenant,
            owner=brain.owner,
            updated_at=brain.updated_at,
        )


class BrainAccessList(Wire):
    items: list[BrainAccess]


class BrainAccessChange(BaseModel):
    """What may change: the visibility and the owning subject (moving tenants is the operator's)."""

    model_config = ConfigDict(extra="forbid")

    visibility: Literal["private", "tenant", "public"] | None = None
    owner: Principal | None = Field(default=None, description="The subject that owns a private brain.")
