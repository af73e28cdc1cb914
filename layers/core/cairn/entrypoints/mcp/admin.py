"""The admin surface (`/mcp/admin`, `cairn mcp --surface admin`): who owns a brain and who else may
see it. Cairn's own tools, apart from the memory surfaces agents are configured for."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from cairn import __version__
from cairn.auth.principal import ADMIN, READ
from cairn.entrypoints.mcp.audit import tool_audit
from cairn.entrypoints.mcp.errors import error_result
from cairn.entrypoints.mcp.tools import SurfaceDeps, SurfaceServer, ToolArgs, make_tool, ok_result
from cairn.entrypoints.wire_admin import BrainAccess, BrainAccessList, Principal

ADMIN_SCOPES = {"admin_list_brains": READ, "admin_update_brain": ADMIN}


class NoArgs(ToolArgs):
    pass


class UpdateBrainArgs(ToolArgs):
    brain: Annotated[str, Field(min_length=1, description="Brain id or slug.")]
    visibility: Annotated[
        Literal["private", "tenant", "public"] | None,
        Field(description="private: its owner only; tenant: its tenant; public: anyone may read."),
    ] = None
    owner: Annotated[Principal | None, Field(description="The subject that owns it from now on.")] = None


def build_admin(deps: SurfaceDeps) -> SurfaceServer:
    brains = deps.container.brains

    def list_brains(_: NoArgs) -> CallToolResult:
        listed = BrainAccessList(items=[BrainAccess.of(b) for b in brains.list()])
        lines = [f"{b.slug}: {b.visibility}, owner {b.owner_tenant}/{b.owner or '*'}" for b in listed.items]
        return ok_result("\n".join(lines) or "No brains.", listed)

    def update_brain(a: UpdateBrainArgs) -> CallToolResult:
        brain = BrainAccess.of(brains.update(a.brain, visibility=a.visibility, owner=a.owner))
        return ok_result(f"{brain.slug}: {brain.visibility}, owner {brain.owner_tenant}/{brain.owner}", brain)

    tools = [
        make_tool(
            "admin_list_brains",
            "List the brains the caller may see, with their owner and visibility.",
            NoArgs,
            list_brains,
            BrainAccessList,
        ),
        make_tool(
            "admin_update_brain",
            "Change a brain's visibility or owning subject (needs brains:admin on the brain).",
            UpdateBrainArgs,
            update_brain,
            BrainAccess,
        ),
    ]
    return SurfaceServer(
        "cairn-admin",
        version=__version__,
        tools=tools,
        render_error=error_result,
        scopes=ADMIN_SCOPES,
        audit=tool_audit(deps.container),
    )
