"""The audit record of MCP tool calls that changed something: (principal, `mcp.<tool>`, brain id,
target), taken from the tool's own `audit` declaration over the call's validated argument model,
never from the raw arguments, which may hold anything. An answer its tool marks `nothing_changed` is
not recorded; nor is one whose brain cannot be resolved (no brain yet, or none the caller may see),
which is logged at INFO: there is no brain to file it under."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from mcp_types import CallToolResult

from cairn.auth import access
from cairn.auth.principal import Principal
from cairn.domain.errors import Forbidden, NoBrain, NotFound
from cairn.entrypoints.mcp.kit.spec import ToolArgs, ToolSpec

if TYPE_CHECKING:
    from cairn.container import Container

NOTHING_CHANGED: Final = "cairn.dev/unchanged"
"""In a result's _meta: the call succeeded and changed nothing, so there is nothing to audit."""

log = logging.getLogger("cairn.mcp")


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
        if (result.meta or {}).get(NOTHING_CHANGED) is True:
            return
        entry = spec.audit(args, result)
        try:
            brain_id = entry.brain_id or self.brain_id_of(entry.brain)
        except (NoBrain, NotFound, Forbidden) as exc:
            log.info("audit of tool %s skipped: its brain is not resolved (%s)", spec.name, exc.code)
            return
        self.log.record(current.principal, f"mcp.{spec.name}", brain_id=brain_id, target=entry.target)


def nothing_changed(result: CallToolResult) -> CallToolResult:
    """The result, marked as a success that changed nothing (not audited)."""
    return result.model_copy(update={"meta": {**(result.meta or {}), NOTHING_CHANGED: True}})


def container_audit(container: Container) -> AuditSink:
    """The audit sink of a surface served from `container`."""
    return AuditSink(container.audit, lambda ref: container.brains.resolve(ref).id)
