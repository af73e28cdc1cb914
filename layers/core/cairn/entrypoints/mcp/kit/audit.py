"""The audit record of MCP tool calls that changed something: (principal, `mcp.<tool>`, brain id,
target), taken from the tool's own `audit` declaration over the call's validated argument model,
never from the raw arguments, which may hold anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from mcp_types import CallToolResult

from cairn.auth import access
from cairn.auth.principal import Principal
from cairn.entrypoints.mcp.kit.spec import ToolArgs, ToolSpec

if TYPE_CHECKING:
    from cairn.container import Container


class AuditLog(Protocol):
    def record(
        self,
        principal: Principal | None,
        action: str,
        *,
        brain_id: str | None = None,
        target: str | None = None,
    ) -> object: ...


class CallAudit(Protocol):
    """What SurfaceServer calls after a successful call whose scope is not read."""

    def record(self, spec: ToolSpec[Any], args: ToolArgs, result: CallToolResult) -> None: ...


class AuditSink:
    """Records a successful call that changed something. `brain_id_of` turns the reference a tool
    reports into the brain's id (as the tool resolved it)."""

    def __init__(self, log: AuditLog, brain_id_of: Callable[[str | None], str]) -> None:
        self.log = log
        self.brain_id_of = brain_id_of

    def record(self, spec: ToolSpec[Any], args: ToolArgs, result: CallToolResult) -> None:
        current = access.current()
        if current is None or spec.audit is None:  # the system itself (stdio, the CLI) is not audited
            return
        entry = spec.audit(args, result)
        brain_id = entry.brain_id or self.brain_id_of(entry.brain)
        self.log.record(current.principal, f"mcp.{spec.name}", brain_id=brain_id, target=entry.target)


def container_audit(container: Container) -> AuditSink:
    """The audit sink of a surface served from `container`."""
    return AuditSink(container.audit, lambda ref: container.brains.resolve(ref).id)
