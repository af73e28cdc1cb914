"""Surface-independent MCP machinery: tools built from pydantic argument models, clean input
schemas, and one place where every tool failure becomes the surface's own error result.

A tool is `handler(args) -> CallToolResult`, where `args` is a validated `ToolArgs` model. The
model is the contract: its JSON Schema (cleaned of pydantic's titles and nullable arms) is what
tools/list advertises, and the same model validates the call, so a schema violation never reaches
a service and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cairn.auth import access
from cairn.auth.principal import READ
from cairn.domain.errors import CairnError
from cairn.services.ingest import LocalFilePolicy

if TYPE_CHECKING:
    from cairn.bootstrap import Container

log = logging.getLogger("cairn.mcp")

ArgsT = TypeVar("ArgsT", bound="ToolArgs")
ErrorRenderer = Callable[[str, str], CallToolResult]
"""(code, message) -> the surface's error result (isError true)."""
ToolAudit = Callable[[str, BaseModel, CallToolResult], None]
"""(tool, validated arguments, result) -> records a call that changed something."""


BrainRef = Annotated[
    str | None, Field(description="Brain id or slug (default: JBMCP_DEFAULT_BRAIN, else the first brain).")
]


class ToolArgs(ArgModelBase):
    """Base of every tool's argument model. Unknown keys are ignored, as the seeds' zod objects do."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")


@dataclass(frozen=True)
class SurfaceDeps:
    """What a surface's tools may use. `local_files` is decided by the transport: below the ingest
    root over HTTP, the caller's own files over stdio."""

    container: Container
    local_files: LocalFilePolicy


def ok_result(text: str, payload: BaseModel) -> CallToolResult:
    """A summary in content[0].text and the payload as structuredContent."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=payload.model_dump(mode="json")
    )


def make_tool(
    name: str,
    description: str,
    args: type[ArgsT],
    handler: Callable[[ArgsT], CallToolResult],
    output: type[BaseModel] | None = None,
) -> Tool:
    """A sync tool (the SDK runs it in a worker thread) whose input schema is `args`' schema."""

    def fn(**validated: Any) -> CallToolResult:
        return handler(args.model_validate(validated))

    return _tool(fn, name, description, args, output, context_kwarg=None)


def make_streaming_tool(
    name: str,
    description: str,
    args: type[ArgsT],
    handler: Callable[[ArgsT, Context[Any, Any]], Awaitable[CallToolResult]],
    output: type[BaseModel] | None = None,
) -> Tool:
    """An async tool that receives the request Context (to send progress notifications)."""

    async def fn(ctx: Context[Any, Any], **validated: Any) -> CallToolResult:
        return await handler(args.model_validate(validated), ctx)

    return _tool(fn, name, description, args, output, context_kwarg="ctx")


def _tool(
    fn: Callable[..., Any],
    name: str,
    description: str,
    args: type[ToolArgs],
    output: type[BaseModel] | None,
    *,
    context_kwarg: str | None,
) -> Tool:
    return Tool(
        fn=fn,
        name=name,
        title=None,
        description=description,
        parameters=clean_schema(args.model_json_schema(by_alias=True)),
        fn_metadata=FuncMetadata(arg_model=args, output_model=output),
        is_async=context_kwarg is not None,
        context_kwarg=context_kwarg,
        annotations=None,
    )


def clean_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Drop pydantic's `title`s, inline `$defs` references (the seeds spell nested objects out),
    and turn `anyOf [T, null]` with `default: null` (an optional Python argument) into plain `T`:
    optional means "may be omitted", as in the seeds."""
    defs = {**(defs or {}), **schema.get("$defs", {})}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
        schema = {**defs[ref[8:]], **{k: v for k, v in schema.items() if k != "$ref"}}
    out = {k: v for k, v in schema.items() if k not in ("title", "$defs")}
    if "properties" in out:
        out["properties"] = {name: _clean_property(prop, defs) for name, prop in out["properties"].items()}
    if "items" in out and isinstance(out["items"], dict):
        out["items"] = clean_schema(out["items"], defs)
    return out


def _clean_property(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    arms = prop.get("anyOf")
    if isinstance(arms, list) and prop.get("default", ...) is None:
        kept = [a for a in arms if a != {"type": "null"}]
        if len(kept) == 1:
            rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            prop = {**kept[0], **rest}
    return clean_schema(prop, defs)


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class SurfaceServer(MCPServer[Any]):
    """An MCPServer whose tool failures all go through one `ErrorRenderer`:
    bad arguments -> validation_error, CairnError -> its code and message, a crash -> internal_error
    (logged with its traceback, its text withheld from the caller)."""

    def __init__(
        self,
        name: str,
        *,
        version: str,
        tools: Sequence[Tool],
        render_error: ErrorRenderer,
        scopes: Mapping[str, str],
        audit: ToolAudit | None = None,
    ) -> None:
        # WARNING: MCPServer configures the root logger when nothing else has; INFO would log every request.
        super().__init__(name, version=version, tools=list(tools), log_level="WARNING")
        self.tool_names = frozenset(t.name for t in tools)
        self.render_error = render_error
        self.scopes = dict(scopes)
        self.audit = audit

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The tool, run as the caller with the tool's scope (auth/access.py); refused when the
        caller lacks it or the tool declares none."""
        scope = self.scopes.get(name)
        try:
            if scope is None and name in self.tool_names and access.current() is not None:
                raise access.InsufficientScope(None)
            with access.needing(scope) if scope else nullcontext():
                result = await super().call_tool(name, arguments, context)
                changed = scope != READ and isinstance(result, CallToolResult) and not result.is_error
                if changed and self.audit is not None and isinstance(result, CallToolResult):
                    self._audit(name, arguments, result)
                return result
        except CairnError as exc:  # refused before the tool ran
            return self.render_error(exc.code, exc.message)
        except ToolError as exc:
            code, message = self._classify(name, exc)
            return self.render_error(code, message)

    def _audit(self, name: str, arguments: dict[str, Any], result: CallToolResult) -> None:
        """Audit a call that changed something, from its validated arguments (the call succeeded, so
        they validate); a failing audit is logged and never turns that success into an error."""
        assert self.audit is not None
        try:
            tool = self._tool_manager.get_tool(name)
            if tool is None:
                return
            args = tool.fn_metadata.arg_model.model_validate(arguments)
            self.audit(name, args, result)
        except Exception:
            log.exception("audit of tool %s failed", name)

    def _classify(self, name: str, exc: ToolError) -> tuple[str, str]:
        cause = exc.__cause__
        if name not in self.tool_names:
            return "unknown_tool", f"unknown tool: {name}"
        if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
            log.info("tool %s rejected arguments: %s", name, validation_message(cause))
            return "validation_error", validation_message(cause)
        if isinstance(cause, CairnError):
            log.info("tool %s failed: %s: %s", name, cause.code, cause.message)
            return cause.code, cause.message
        log.error("tool %s crashed", name, exc_info=cause or exc)
        return "internal_error", f"internal error in {name}"
