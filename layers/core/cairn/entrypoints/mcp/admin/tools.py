"""The admin surface's tools: who owns a brain and who else may see it."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from cairn.auth.principal import ADMIN, READ
from cairn.entrypoints.mcp.kit import AuditTarget, SurfaceDeps, ToolArgs, ToolSpec, ok_result
from cairn.entrypoints.wire_admin import BrainAccess, BrainAccessList, Principal


class NoArgs(ToolArgs):
    pass


class UpdateBrainArgs(ToolArgs):
    brain: Annotated[str, Field(min_length=1, description="Brain id or slug.")]
    visibility: Annotated[
        Literal["private", "tenant", "public"] | None,
        Field(description="private: its owner only; tenant: its tenant; public: anyone may read."),
    ] = None
    owner: Annotated[Principal | None, Field(description="The subject that owns it from now on.")] = None


def list_brains(deps: SurfaceDeps, _: NoArgs) -> CallToolResult:
    listed = BrainAccessList(items=[BrainAccess.of(b) for b in deps.container.brains.list()])
    lines = [f"{b.slug}: {b.visibility}, owner {b.owner_tenant}/{b.owner or '*'}" for b in listed.items]
    return ok_result("\n".join(lines) or "No brains.", listed)


def update_brain(deps: SurfaceDeps, a: UpdateBrainArgs) -> CallToolResult:
    brain = BrainAccess.of(deps.container.brains.update(a.brain, visibility=a.visibility, owner=a.owner))
    return ok_result(f"{brain.slug}: {brain.visibility}, owner {brain.owner_tenant}/{brain.owner}", brain)


def updated_brain(_: UpdateBrainArgs, result: CallToolResult) -> AuditTarget:
    """The brain the call changed, by the id in its result (the caller may no longer see it)."""
    assert result.structured_content is not None
    return AuditTarget(brain_id=str(result.structured_content["id"]))


ADMIN_LIST_BRAINS = ToolSpec(
    name="admin_list_brains",
    description="List the brains the caller may see, with their owner and visibility.",
    args=NoArgs,
    output=BrainAccessList,
    scope=READ,
    handler=list_brains,
)

ADMIN_UPDATE_BRAIN = ToolSpec(
    name="admin_update_brain",
    description="Change a brain's visibility or owning subject (needs brains:admin on the brain).",
    args=UpdateBrainArgs,
    output=BrainAccess,
    scope=ADMIN,
    handler=update_brain,
    audit=updated_brain,
)
