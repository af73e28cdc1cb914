"""The audit record of MCP tool calls that changed something (SurfaceServer calls it on success,
with the call's validated argument model: never the raw arguments, which may hold anything)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult
from pydantic import BaseModel

from cairn.auth import access
from cairn.entrypoints.mcp.tools import ToolAudit

if TYPE_CHECKING:
    from cairn.bootstrap import Container

TARGET_FIELDS = ("path", "session_id", "url")


def tool_audit(container: Container) -> ToolAudit:
    """Record a tool call that changed something: the caller, the tool, its brain and target."""

    def record(tool: str, args: BaseModel, result: CallToolResult) -> None:
        current = access.current()
        if current is None:
            return
        payload: dict[str, Any] = result.structured_content or {}
        if str(payload.get("id", "")).startswith("brn_"):  # the call created or changed this brain
            brain_id = payload["id"]
        else:
            brain_id = container.brains.resolve(getattr(args, "brain", None)).id
        target = next((getattr(args, f) for f in TARGET_FIELDS if getattr(args, f, None)), None)
        container.audit.record(
            current.principal, f"mcp.{tool}", brain_id=brain_id, target=str(target) if target else None
        )

    return record
