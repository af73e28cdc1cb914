"""A tool, declared once: name, description, argument model, output model, scope, handler and
what its audit records.

The argument model is the contract: its JSON Schema (cleaned, schema.py) is what tools/list
advertises, and the same model validates a call once, so a schema violation never reaches a service
and changes nothing. A handler takes the surface's deps first, so a declaration is plain data
(module level): tools/list, the scope table and the audit target can be read without any services.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict

from cairn.auth.principal import PUBLIC, READ
from cairn.services.ingest.inputs import LocalFilePolicy

UNAUDITED = (READ, PUBLIC)
"""Scopes of tools that change nothing (a read, a health check): nothing to audit."""


class ToolArgs(ArgModelBase):
    """Base of every tool's argument model. Unknown keys are ignored, as the seeds' zod objects do.
    A number must be finite: `"nan"` or `"inf"` given for a number is refused like any other
    value that is not one, never carried into arithmetic (zod's `number()` refuses them too)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", allow_inf_nan=False)


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


S = TypeVar("S")


@dataclass(frozen=True)
class SurfaceDeps(Generic[S]):
    """What a surface's tools may use: the services of their surface (its SurfaceDecl's `services`,
    taken from the Container once), and `local_files`, decided by the transport: below the ingest
    root over HTTP, the caller's own files over stdio."""

    services: S
    local_files: LocalFilePolicy


@dataclass(frozen=True)
class AuditTarget:
    """What the audit records for a call that changed something: its brain (`brain_id` when the call
    knows it, e.g. the brain it created; else `brain`, a reference the audit resolves as the tool
    did, None meaning the default brain) and its target (a path, session, URL…), if any."""

    brain: str | None = None
    brain_id: str | None = None
    target: str | None = None


Handler = Callable[[SurfaceDeps, ArgsT], CallToolResult]
"""Sync: the server runs it in a worker thread (services are synchronous)."""
StreamingHandler = Callable[[SurfaceDeps, ArgsT, Context[Any, Any]], Awaitable[CallToolResult]]
"""Async, on the event loop, with the request Context (progress notifications)."""
ToolAudit = Callable[[ArgsT, CallToolResult], AuditTarget]
"""(validated arguments, successful result) -> what the audit records."""


@dataclass(frozen=True, kw_only=True)
class ToolSpec(Generic[ArgsT]):
    """One tool. Exactly one of `handler` and `streaming`. `scope` is required: a tool that needs
    nothing cannot be declared. A tool that may change something (any scope but read) says what its
    audit records."""

    name: str
    description: str
    args: type[ArgsT]
    output: type[BaseModel] | None
    scope: str
    handler: Handler[ArgsT] | None = None
    streaming: StreamingHandler[ArgsT] | None = None
    audit: ToolAudit[ArgsT] | None = None
    destructive: bool = False
    """It removes for good (a brain, a subject's data): tools/list says so (`destructiveHint`), so a
    client can ask its user first."""
    scope_of: Callable[[ArgsT], str] | None = None
    """For a tool whose arguments choose between reading and changing (zengram's `brain_consolidate`
    runs, or reports on, a consolidation): the scope a call with these arguments needs. `scope` is
    then the least any call needs, checked before the arguments are read."""

    def __post_init__(self) -> None:
        if not isinstance(self.scope, str) or not self.scope:
            raise ValueError(f"tool {self.name}: a scope is required")
        if (self.handler is None) == (self.streaming is None):
            raise ValueError(f"tool {self.name}: give exactly one of handler and streaming")
        if (self.scope not in UNAUDITED or self.scope_of is not None) and self.audit is None:
            raise ValueError(f"tool {self.name}: a tool that may change something must say what it audits")

    def needs(self, args: ArgsT) -> str:
        """The scope a call with these (validated) arguments needs."""
        return self.scope if self.scope_of is None else self.scope_of(args)


def ok_result(text: str, payload: BaseModel) -> CallToolResult:
    """A summary in content[0].text and the payload as structuredContent."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=payload.model_dump(mode="json")
    )


AUDIT_BRAIN: Final = "cairn.dev/brain"
AUDIT_TARGET: Final = "cairn.dev/target"
"""Where a text-only answer carries what its mutation changed (the result's _meta), for the audit."""


def audit_meta(result: CallToolResult, brain_id: str, target: str | None) -> CallToolResult:
    """The result, naming the brain and target its mutation changed (see `declare`)."""
    return result.model_copy(update={"meta": {AUDIT_BRAIN: brain_id, AUDIT_TARGET: target}})


def audit_from_meta(_: ToolArgs, result: CallToolResult) -> AuditTarget:
    meta = result.meta or {}
    return AuditTarget(brain_id=meta.get(AUDIT_BRAIN), target=meta.get(AUDIT_TARGET))


def declare(
    name: str, description: str, args: type[ArgsT], scope: str, handler: Handler[ArgsT]
) -> ToolSpec[ArgsT]:
    """A tool with no output schema whose answers are text; a mutation's audit reads the brain and
    target its handler put in the result (`audit_meta`)."""
    return ToolSpec(
        name=name,
        description=description,
        args=args,
        output=None,
        scope=scope,
        handler=handler,
        audit=audit_from_meta if scope not in UNAUDITED else None,
    )
