"""Who a brain belongs to, as the operator's REST route, admin MCP surface and CLI show it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.entrypoints.wire import Timestamp, Wire
from cairn.services.brains import PRINCIPAL_NAME
from cairn.services.erasure.log import Receipt

Principal = Annotated[str, Field(min_length=1, max_length=128, pattern=PRINCIPAL_NAME.pattern)]


class BrainAccess(Wire):
    id: str
    slug: str
    name: str
    visibility: Literal["private", "tenant", "public"]
    owner_tenant: str
    owner: str | None
    updated_at: Timestamp


class BrainAccessList(Wire):
    items: list[BrainAccess]


class BrainAccessChange(BaseModel):
    """What may change: the visibility and the owning subject (moving tenants is the operator's)."""

    model_config = ConfigDict(extra="forbid")

    visibility: Literal["private", "tenant", "public"] | None = None
    owner: Principal | None = Field(default=None, description="The subject that owns a private brain.")


SubjectKindName = Literal["thoughtmcp_user", "source_agent", "agent_scope", "session_actor", "any"]


class EraseSubject(BaseModel):
    """Who to erase: a ThoughtMCP user, a zengram source agent, a Jeffs Brain agent scope, a
    session's actor, or `any` of them under that name at once, in the named brains (default: every
    brain the caller may erase in)."""

    model_config = ConfigDict(extra="forbid")

    kind: SubjectKindName = Field(description="What `subject` names.")
    subject: str = Field(min_length=1, max_length=256, description="The userId, agent or actor.")
    brains: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(
        default=None, min_length=1, max_length=100, description="Brain ids or slugs; default every one."
    )


class ErasureReceipt(Wire):
    """What an erasure or a brain deletion removed, counted by kind; it never names the subject."""

    id: str
    kind: str
    subject_digest: str
    brains: list[str]
    removed: dict[str, int]
    status: Literal["running", "completed"]
    started_at: Timestamp
    finished_at: Timestamp | None = None
    stalled: str | None = Field(
        default=None,
        description="why a running erasure stopped short of its end (a damaged file of the store: "
        "`cairn check` names it; or the store's files could not be scrubbed for a reason another try "
        "at once cannot fix); it resumes when the server next starts or this receipt is asked for",
    )

    @classmethod
    def of(cls, receipt: Receipt) -> ErasureReceipt:
        return cls.model_validate(receipt.model_dump(exclude={"by"}))
