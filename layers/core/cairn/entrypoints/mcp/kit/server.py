"""SurfaceServer: an MCPServer built from tool declarations, an error policy and an audit sink.

tools/list advertises each declaration's cleaned input schema and its output schema. tools/call:

1. an unknown tool -> `unknown_tool`;
2. the tool's scope is checked (auth/access.py) and held while it runs; a caller without it ->
   the refusal's code (`forbidden`…); a tool whose arguments choose the scope (`scope_of`) has
   that scope checked too once they are read;
3. the raw arguments are validated once, with the declaration's model (after the SDK's pre-parsing
   of JSON-encoded strings, unless the surface refuses them) -> `validation_error` with every
   field's complaint;
4. the handler runs with that model: a sync one in a worker thread, a streaming one on the event
   loop with the request Context; a CairnError -> its code and message; an MCPError passes through
   (a JSON-RPC error); a full disk or a damaged database -> `storage_full`, `damaged_store`
   (domain/errors.py `storage_failure`); anything else -> `internal_error`, logged with its
   traceback, its text withheld from the caller;
5. a successful result is checked against the output model (as the SDK does), and, when the call's
   scope is not read, audited from the same validated model; a failing audit is logged and never
   turns that success into an error;
6. with `calls` set (`cairn serve`, `cairn mcp`), a call cancelled while its handler runs leaves
   the handler's thread running, counted for the process's stop (cairn/off_loop.py), and the
   thread settles the outcome as 4-5 would have: logged, checked, audited.

Every failure goes through the surface's ErrorPolicy (errors.py), its message made safe to quote
first (domain/echo.py: bounded, no credential, control characters escaped).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from cairn.auth import access
from cairn.domain.echo import safe_echo
from cairn.domain.errors import CairnError, storage_failure
from cairn.entrypoints.mcp.kit import request_meta
from cairn.entrypoints.mcp.kit.audit import CallAudit
from cairn.entrypoints.mcp.kit.errors import ErrorPolicy, validation_message
from cairn.entrypoints.mcp.kit.schema import clean_schema
from cairn.entrypoints.mcp.kit.spec import UNAUDITED, SurfaceDeps, ToolArgs, ToolSpec
from cairn.off_loop import CallsInFlight, counted_by, run_counted

log = logging.getLogger("cairn.mcp")

# MCPServer serves prompts and resources whether or not it has any, and so advertises both at
# initialize; no memory server Cairn stands in for has them, so a surface serves tools alone
# (initialize then advertises `tools` and nothing else, as the originals do).
_NOT_SERVED = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
)


def refused_when_error(result: CallToolResult) -> bool:
    """A call is refused when its result has isError set (most surfaces' way)."""
    return bool(result.is_error)


class SurfaceServer(MCPServer[Any]):
    """One surface: its tool declarations served with its error policy and audit (module docstring)."""

    def __init__(
        self,
        name: str,
        *,
        version: str,
        tools: Sequence[ToolSpec[Any]],
        deps: SurfaceDeps[Any],
        errors: ErrorPolicy,
        audit: CallAudit | None = None,
        instructions: str | None = None,
        nullable_optionals: bool = False,
        decode_json_strings: bool = True,
        refused: Callable[[CallToolResult], bool] = refused_when_error,
    ) -> None:
        specs = {spec.name: spec for spec in tools}
        if len(specs) != len(tools):
            raise ValueError(f"{name}: two tools share a name")
        registered = [_listed(spec, nullable_optionals) for spec in tools]
        # WARNING: MCPServer configures the root logger when nothing else has; INFO would log every request.
        super().__init__(
            name,
            version=version,
            instructions=instructions,
            tools=registered,
            log_level="WARNING",
            subscriptions=False,  # a surface's tools never change while it runs: nothing to listen for
        )
        for method in _NOT_SERVED:  # the SDK has no public way to unregister a handler
            self._lowlevel_server._request_handlers.pop(method, None)
        self.specs = specs
        self._fn_metadata = {tool.name: tool.fn_metadata for tool in registered}
        self.deps = deps
        self.errors = errors
        self.audit = audit
        self.decode_json_strings = decode_json_strings
        self.refused = refused
        # Set (`cairn mcp`, `cairn serve`): a handler's thread is counted there and left to run
        # when its call is cancelled, instead of the call waiting for it (cairn/off_loop.py).
        self.calls: CallsInFlight | None = None

    @property
    def scopes(self) -> dict[str, str]:
        """The scope each tool needs."""
        return {name: spec.scope for name, spec in self.specs.items()}

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        spec = self.specs.get(name)
        if spec is None:
            return self._error("unknown_tool", f"unknown tool: {name}")
        try:
            with access.needing(spec.scope):
                return await self._call(spec, arguments, context)
        except CairnError as exc:  # refused before the tool ran
            return self._error(exc.code, exc.message, exc)

    async def _call(
        self, spec: ToolSpec[Any], arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult | InputRequiredResult:
        metadata = self._fn_metadata[spec.name]
        try:
            raw = metadata.pre_parse_json(arguments) if self.decode_json_strings else arguments
            args = spec.args.model_validate(raw)
        except MCPError:
            raise
        except ValidationError as exc:
            message = safe_echo(validation_message(exc))
            log.info("tool %s rejected arguments: %s", spec.name, message)
            return self._error("validation_error", message)
        except Exception as exc:  # a validator that raises something else: as if the tool raised it
            return self._failed(spec.name, exc)
        needed = spec.needs(args)
        try:
            with access.needing(needed), request_meta.carrying(_meta_of(context)):
                result = await self._run(spec, args, context, needed)
            converted = metadata.convert_result(result)  # the output model's check, as the SDK does it
        except MCPError:
            raise
        except Exception as exc:
            return self._failed(spec.name, exc)
        if not isinstance(converted, CallToolResult):
            return converted
        if needed not in UNAUDITED and not self.refused(converted) and self.audit is not None:
            self._audit(self.audit, spec, args, converted)
        return converted

    async def _run(
        self,
        spec: ToolSpec[Any],
        args: ToolArgs,
        context: Context[Any, Any] | None,
        needed: str | None = None,
    ) -> Any:
        calls = self.calls
        if spec.handler is not None:
            run = functools.partial(spec.handler, self.deps, args)
            if calls is None:
                return await anyio.to_thread.run_sync(run)
            after_cut = functools.partial(self._after_cut, spec, args, needed or spec.scope)
            return await run_counted(calls, run, after_cut)
        assert spec.streaming is not None
        if context is None:  # called directly rather than through tools/call
            context = Context(mcp_server=self, subscriptions=self._subscriptions)
        with counted_by(calls):  # its steps off the loop, counted as a sync handler's run (off_loop.py)
            return await spec.streaming(self.deps, args, context)

    def _after_cut(
        self,
        spec: ToolSpec[Any],
        args: ToolArgs,
        needed: str,
        result: Any,
        failure: Exception | None,
    ) -> None:
        """A call its session's end (stdio) or the server's stop (HTTP) cut short, whose handler
        ran on in its thread and has now ended: no caller is left to answer, so what `_call` does
        with an answer is done here, as the call really ended. A failure is logged (the error's
        code, or a crash's traceback); a success is checked against the output model and, when
        its scope is not read, audited, as an answered call is."""
        if failure is not None:
            _failed_after_cut(spec.name, failure)
            return
        try:
            converted = self._fn_metadata[spec.name].convert_result(result)
        except Exception as exc:
            _failed_after_cut(spec.name, exc)
            return
        log.warning("tool %s ended after the stop cut its call short", spec.name)
        if not isinstance(converted, CallToolResult) or needed in UNAUDITED or self.refused(converted):
            return
        if self.audit is not None:
            self._audit(self.audit, spec, args, converted)

    def _error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        """The surface's answer to a failed call, its message said as domain/echo.py says it
        (a message may quote the caller's tool name, field names or values)."""
        return self.errors.tool_error(code, safe_echo(message), cause)

    def _failed(self, name: str, exc: Exception) -> CallToolResult:
        exc = storage_failure(exc) or exc  # a full disk, a damaged database: said, not a crash
        if isinstance(exc, CairnError):
            # the code only: a message may quote what the caller sent, a credential pasted in a field
            log.info("tool %s failed: %s", name, exc.code)
            return self._error(exc.code, exc.message, exc)
        log.error("tool %s crashed", name, exc_info=exc)
        return self._error("internal_error", f"internal error in {name}")

    @staticmethod
    def _audit(sink: CallAudit, spec: ToolSpec[Any], args: ToolArgs, result: CallToolResult) -> None:
        try:
            sink.record(spec, args, result)
        except Exception:
            log.exception("audit of tool %s failed", spec.name)


def _failed_after_cut(name: str, exc: Exception) -> None:
    """A call cut short whose handler, run on in its thread, then failed."""
    exc = storage_failure(exc) or exc
    if isinstance(exc, CairnError):  # the code only, as for an answered call (`_failed`)
        log.warning("tool %s failed after the stop cut its call short: %s", name, exc.code)
    else:
        log.error("tool %s crashed after the stop cut its call short", name, exc_info=exc)


def _listed(spec: ToolSpec[Any], nullable: bool = False) -> Tool:
    """The SDK's record of the tool: what tools/list shows, and the output model results are checked
    against. SurfaceServer.call_tool runs the tool itself, so the SDK never calls `fn`."""

    def fn(**_: Any) -> None:
        raise RuntimeError(f"tool {spec.name} runs through SurfaceServer.call_tool")

    return Tool(
        fn=fn,
        name=spec.name,
        title=None,
        description=spec.description,
        parameters=clean_schema(spec.args.model_json_schema(by_alias=True), nullable=nullable),
        fn_metadata=FuncMetadata(arg_model=spec.args, output_model=spec.output),
        is_async=spec.streaming is not None,
        context_kwarg="ctx" if spec.streaming is not None else None,
        annotations=ToolAnnotations(destructive_hint=True) if spec.destructive else None,
    )


def _meta_of(context: Context[Any, Any] | None) -> dict[str, Any] | None:
    """The tools/call request's `_meta`; None when the tool is called directly."""
    try:
        meta = context.request_context.meta if context is not None else None
    except ValueError:  # a Context made outside a request
        return None
    return dict(meta) if meta else None
