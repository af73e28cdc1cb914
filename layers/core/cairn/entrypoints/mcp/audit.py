"""The audit record of MCP tool calls that changed something (SurfaceServer calls it on success)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cairn.auth import access
from cairn.domain.errors import CairnError

if TYPE_CHECKING:
    from cairn.bootstrap import Container

log = logging.getLogger("cairn.audit")


def tool_audit(container: Container) -> Callable[[str, dict[str, Any]], None]:
    """Record a tool call that changed something: the caller, the tool, its brain and target."""

    def record(tool: str, arguments: dict[str, Any]) -> None:
        current = access.current()
        if current is None:
            return
        brain_id = None
        if "brain" in arguments or tool != "memory_create_brain":
            try:
                brain_id = container.brains.resolve(arguments.get("brain")).id
            except CairnError:
                brain_id = None
        target = arguments.get("path") or arguments.get("session_id") or arguments.get("url")
        try:
            container.audit.record(
                current.principal, f"mcp.{tool}", brain_id=brain_id, target=str(target) if target else None
            )
        except CairnError:
            log.exception("audit record failed for tool %s", tool)

    return record
