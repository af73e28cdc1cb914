"""The surface-neutral MCP kit, on a toy surface served to the official MCP client in memory:
arguments validated once, the error policy deciding between a tool error and a JSON-RPC error, the
audit fed the validated model and never failing a call, and no tool without a scope."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated, Any, cast

import pytest
from mcp import Client
from mcp.server.mcpserver.context import Context
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent
from pydantic import BaseModel, Field, model_validator

from cairn.auth import access
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.domain.errors import NoBrain
from cairn.entrypoints.mcp.kit import (
    AuditSink,
    AuditTarget,
    JsonRpcErrors,
    SurfaceDeps,
    SurfaceServer,
    ToolArgs,
    ToolSpec,
    ok_result,
)
from cairn.services.ingest.inputs import LocalFilePolicy

validations: list[object] = []  # one entry per validation of EchoArgs
handled: list[EchoArgs] = []


class EchoArgs(ToolArgs):
    text: Annotated[str, Field(min_length=1, description="What to echo.")]
    brain: str | None = None
    tags: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _count(cls, data: Any) -> Any:
        validations.append(data)
        return data


class Echoed(BaseModel):
    text: str
    tags: list[str] | None = None


class NoArgs(ToolArgs):
    pass


def echo(_: SurfaceDeps, a: EchoArgs) -> CallToolResult:
    handled.append(a)
    return ok_result(a.text, Echoed(text=a.text, tags=a.tags))


def missing(_: SurfaceDeps, __: NoArgs) -> CallToolResult:
    raise NoBrain("no brain matches 'x'")


def crash(_: SurfaceDeps, __: NoArgs) -> CallToolResult:
    raise RuntimeError("secret detail")


def wrong_shape(_: SurfaceDeps, __: NoArgs) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="x")], structured_content={"nope": 1})


async def count(_: SurfaceDeps, a: EchoArgs, ctx: Context[Any, Any]) -> CallToolResult:
    for n, word in enumerate(a.text.split()):
        await ctx.report_progress(n, None, word)
    return ok_result(a.text, Echoed(text=a.text))


ECHO = ToolSpec(
    name="toy_echo",
    description="Echo the text (a write, so it is audited).",
    args=EchoArgs,
    output=Echoed,
    scope=WRITE,
    handler=echo,
    audit=lambda a, _: AuditTarget(brain=a.brain, target=a.text),
)
TOOLS = (
    ECHO,
    ToolSpec(name="toy_missing", description="Fails.", args=NoArgs, output=None, scope=READ, handler=missing),
    ToolSpec(name="toy_crash", description="Crashes.", args=NoArgs, output=None, scope=READ, handler=crash),
    ToolSpec(
        name="toy_shape", description="Bad.", args=NoArgs, output=Echoed, scope=READ, handler=wrong_shape
    ),
    ToolSpec(
        name="toy_count", description="Words.", args=EchoArgs, output=Echoed, scope=READ, streaming=count
    ),
)
DEPS = SurfaceDeps(services=cast(Any, None), local_files=LocalFilePolicy(root=None, max_bytes=1))


class TextErrors:
    """A surface whose failures are tool results: isError, `code: message`; it keeps each cause."""

    def __init__(self) -> None:
        self.causes: list[BaseException | None] = []

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        self.causes.append(cause)
        return CallToolResult(content=[TextContent(type="text", text=f"{code}: {message}")], is_error=True)


class Recorded:
    """An audit that keeps what it was given (or fails, when told to)."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, ToolArgs, CallToolResult]] = []
        self.fail = fail

    def record(self, spec: ToolSpec[Any], args: ToolArgs, result: CallToolResult) -> None:
        self.calls.append((spec.name, args, result))
        if self.fail:
            raise RuntimeError("audit store down")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    validations.clear()
    handled.clear()
    yield


def toy(errors: Any = None, audit: Any = None) -> SurfaceServer:
    return SurfaceServer(
        "toy", version="1", tools=TOOLS, deps=DEPS, errors=errors or TextErrors(), audit=audit
    )


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


# -- arguments are validated once --------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_call_validates_its_arguments_once_and_the_audit_gets_that_model() -> None:
    audit = Recorded()
    async with Client(toy(audit=audit)) as client:
        result = await client.call_tool("toy_echo", {"text": "hi", "brain": "notes", "stray": 1})

    assert not result.is_error and result.structured_content == {"text": "hi", "tags": None}
    assert len(validations) == 1
    [(name, args, _)] = audit.calls
    assert name == "toy_echo" and args is handled[0]
    assert isinstance(args, EchoArgs) and (args.text, args.brain) == ("hi", "notes")


@pytest.mark.anyio
async def test_json_encoded_arguments_are_still_parsed_before_the_one_validation() -> None:
    async with Client(toy()) as client:
        result = await client.call_tool("toy_echo", {"text": "hi", "tags": '["a", "b"]'})

    assert result.structured_content == {"text": "hi", "tags": ["a", "b"]}
    assert len(validations) == 1


@pytest.mark.anyio
async def test_bad_arguments_are_validated_once_and_never_reach_the_handler_or_the_audit() -> None:
    audit = Recorded()
    async with Client(toy(audit=audit)) as client:
        result = await client.call_tool("toy_echo", {"text": ""})

    assert result.is_error and text(result).startswith("validation_error: text: ")
    assert len(validations) == 1 and handled == [] and audit.calls == []


# -- the error policy -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_returning_policy_gives_tool_errors() -> None:
    async with Client(toy()) as client:
        unknown = await client.call_tool("toy_nothing", {})
        missing = await client.call_tool("toy_missing", {})
        crashed = await client.call_tool("toy_crash", {})
        shape = await client.call_tool("toy_shape", {})

    assert text(unknown) == "unknown_tool: unknown tool: toy_nothing"
    assert text(missing) == "no_brain: no brain matches 'x'"
    assert text(crashed) == "internal_error: internal error in toy_crash"  # its own text stays here
    assert text(shape) == "internal_error: internal error in toy_shape"  # the output model is checked
    assert all(r.is_error and r.structured_content is None for r in (unknown, missing, crashed, shape))


@pytest.mark.anyio
async def test_a_failure_is_logged_by_its_code_not_its_message(caplog: pytest.LogCaptureFixture) -> None:
    """A message may quote the caller's input (a key pasted as a brain name): the log keeps the code."""
    with caplog.at_level(logging.INFO, logger="cairn"):
        async with Client(toy()) as client:
            missing = await client.call_tool("toy_missing", {})

    assert text(missing) == "no_brain: no brain matches 'x'"
    logged = [r.getMessage() for r in caplog.records if "toy_missing" in r.getMessage()]
    assert logged == ["tool toy_missing failed: no_brain"]


@pytest.mark.anyio
async def test_a_raising_policy_gives_the_client_json_rpc_errors() -> None:
    policy = JsonRpcErrors({**JsonRpcErrors().codes, "no_brain": -32001})
    async with Client(toy(errors=policy)) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("toy_nothing", {})
        with pytest.raises(MCPError) as invalid:
            await client.call_tool("toy_echo", {"text": ""})
        with pytest.raises(MCPError) as missing:
            await client.call_tool("toy_missing", {})
        with pytest.raises(MCPError) as crashed:
            await client.call_tool("toy_crash", {})
        still_fine = await client.call_tool("toy_echo", {"text": "ok"})

    assert (unknown.value.code, unknown.value.data) == (INVALID_PARAMS, {"code": "unknown_tool"})
    assert invalid.value.code == INVALID_PARAMS and invalid.value.message.startswith("text: ")
    assert (missing.value.code, missing.value.message) == (-32001, "no brain matches 'x'")
    assert crashed.value.code == INTERNAL_ERROR and "secret" not in crashed.value.message
    assert not still_fine.is_error


# -- the audit ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_failing_audit_never_turns_success_into_an_error() -> None:
    audit = Recorded(fail=True)
    async with Client(toy(audit=audit)) as client:
        result = await client.call_tool("toy_echo", {"text": "kept"})

    assert not result.is_error and result.structured_content == {"text": "kept", "tags": None}
    assert len(audit.calls) == 1


@pytest.mark.anyio
async def test_reads_and_failures_are_not_audited() -> None:
    audit = Recorded()
    async with Client(toy(audit=audit)) as client:
        await client.call_tool("toy_count", {"text": "a b"})
        await client.call_tool("toy_missing", {})
        await client.call_tool("toy_echo", {})

    assert audit.calls == []


class Log:
    def __init__(self) -> None:
        self.entries: list[tuple[Principal | None, str, str | None, str | None]] = []

    def record(
        self,
        principal: Principal | None,
        action: str,
        *,
        brain_id: str | None = None,
        target: str | None = None,
    ) -> object:
        self.entries.append((principal, action, brain_id, target))
        return None


def test_the_audit_sink_records_the_caller_the_tool_the_resolved_brain_and_the_target() -> None:
    log = Log()
    sink = AuditSink(log, lambda ref: f"brn_{ref or 'default'}")
    me = Principal("acme", "ann", frozenset({READ, WRITE}), Via.api_key)
    result = ok_result("hi", Echoed(text="hi"))

    sink.record(ECHO, EchoArgs(text="hi"), result)  # no caller: the system itself, not audited
    with access.acting_as(me):
        sink.record(ECHO, EchoArgs(text="hi", brain="notes"), result)
        sink.record(ECHO, EchoArgs(text="yo"), result)

    assert log.entries == [
        (me, "mcp.toy_echo", "brn_notes", "hi"),
        (me, "mcp.toy_echo", "brn_default", "yo"),
    ]


# -- declarations ---------------------------------------------------------------------------------------


def test_a_tool_without_a_scope_cannot_be_declared() -> None:
    with pytest.raises(TypeError):
        ToolSpec(name="t", description="d", args=NoArgs, output=None, handler=missing)  # type: ignore[call-arg]
    for scope in ("", None):
        with pytest.raises(ValueError, match="scope"):
            ToolSpec(
                name="t", description="d", args=NoArgs, output=None, scope=cast(str, scope), handler=missing
            )


def test_a_tool_that_may_change_something_says_what_its_audit_records() -> None:
    with pytest.raises(ValueError, match="audit"):
        ToolSpec(name="t", description="d", args=NoArgs, output=None, scope=WRITE, handler=missing)
    with pytest.raises(ValueError, match="audit"):  # read by default, but its arguments may ask for write
        ToolSpec(
            name="t", description="d", args=NoArgs, output=None, scope=READ, handler=missing, scope_of=repr
        )


def test_a_tool_has_exactly_one_handler() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ToolSpec(name="t", description="d", args=NoArgs, output=None, scope=READ)
    with pytest.raises(ValueError, match="exactly one"):
        ToolSpec(
            name="t", description="d", args=EchoArgs, output=None, scope=READ, handler=echo, streaming=count
        )


def test_two_tools_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="share a name"):
        SurfaceServer("toy", version="1", tools=(ECHO, ECHO), deps=DEPS, errors=TextErrors())


# -- what tools/list shows, and streaming --------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_list_shows_the_cleaned_input_schema_and_the_output_schema() -> None:
    async with Client(toy()) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}

    assert list(listed) == [spec.name for spec in TOOLS]
    echo_tool = listed["toy_echo"]
    assert echo_tool.input_schema["properties"]["text"] == {
        "description": "What to echo.",
        "minLength": 1,
        "type": "string",
    }
    assert echo_tool.input_schema["properties"]["brain"] == {"type": "string"}  # optional: plain, no null arm
    assert echo_tool.output_schema is not None and set(echo_tool.output_schema["properties"]) == {
        "text",
        "tags",
    }
    assert listed["toy_missing"].output_schema is None


@pytest.mark.anyio
async def test_a_streaming_tool_sends_progress_and_its_result() -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with Client(toy()) as client:
        result = await client.call_tool("toy_count", {"text": "one two"}, progress_callback=progress)

    assert result.structured_content == {"text": "one two", "tags": None}
    assert seen == [(0, "one"), (1, "two")]


@pytest.mark.anyio
async def test_the_policy_gets_the_cores_error_for_its_details() -> None:
    policy = TextErrors()
    async with Client(toy(errors=policy)) as client:
        await client.call_tool("toy_missing", {})
        await client.call_tool("toy_crash", {})

    assert isinstance(policy.causes[0], NoBrain) and str(policy.causes[0]) == "no brain matches 'x'"
    assert policy.causes[1] is None  # a crash's own error stays in the log, never with the policy


# -- a call the session's end cuts short (stdio: SurfaceServer.calls) -----------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("failure", "level"), [(RuntimeError("disk gone"), "ERROR"), (NoBrain("x"), "WARNING")]
)
async def test_a_call_cut_short_that_then_fails_in_its_thread_is_logged(
    caplog: pytest.LogCaptureFixture, failure: Exception, level: str
) -> None:
    """Its thread runs on after the cancel; no caller is left to answer its failure: the log says it."""
    import threading

    import anyio

    from cairn.off_loop import CallsInFlight

    started, release = threading.Event(), threading.Event()

    def held(_: SurfaceDeps, __: NoArgs) -> CallToolResult:
        started.set()
        release.wait(10)
        raise failure

    spec = ToolSpec(name="toy_held", description="Held.", args=NoArgs, output=None, scope=READ, handler=held)
    server = toy()
    server.calls = CallsInFlight()
    caplog.set_level(logging.INFO, logger="cairn.mcp")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server._run, spec, NoArgs(), None)
            await anyio.to_thread.run_sync(started.wait, 10)
            scope.cancel()  # the session's end
    release.set()
    assert server.calls.wait(10)
    [record] = [r for r in caplog.records if "toy_held" in r.getMessage()]
    assert record.levelname == level and "cut its call short" in record.getMessage()
    assert record.getMessage().endswith("short" if level == "ERROR" else ": no_brain")  # the code only


@pytest.mark.anyio
async def test_a_call_that_fails_while_its_caller_waits_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from cairn.off_loop import CallsInFlight

    server = toy()
    server.calls = CallsInFlight()
    caplog.set_level(logging.INFO, logger="cairn.mcp")
    async with Client(server) as client:
        crashed = await client.call_tool("toy_crash", {})
    assert text(crashed) == "internal_error: internal error in toy_crash"
    assert [r.getMessage() for r in caplog.records if "toy_crash" in r.getMessage()] == [
        "tool toy_crash crashed"
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(("outcome", "audited"), [("ok", True), ("refused", False)])
async def test_a_write_cut_short_that_then_ends_in_its_thread_is_audited_as_it_ended(
    outcome: str, audited: bool
) -> None:
    """No caller is left to take its answer, so the thread settles it: a success is audited (as its
    principal, with its validated arguments), a refusal is not, as for an answered call."""
    import threading

    import anyio

    from cairn.off_loop import CallsInFlight

    started, release = threading.Event(), threading.Event()

    def held(deps: SurfaceDeps, a: EchoArgs) -> CallToolResult:
        started.set()
        release.wait(10)
        return echo(deps, a) if outcome == "ok" else TextErrors().tool_error("conflict", "no")

    spec = ToolSpec(
        name="toy_held", description="Held.", args=EchoArgs, output=Echoed, scope=WRITE, handler=held,
        audit=ECHO.audit,
    )  # fmt: skip
    audit, principals = Recorded(), []

    def record(spec: ToolSpec[Any], args: ToolArgs, result: CallToolResult) -> None:
        current = access.current()
        principals.append(current.principal.subject if current is not None else None)
        Recorded.record(audit, spec, args, result)

    audit.record = record  # type: ignore[method-assign]
    server = SurfaceServer("toy", version="1", tools=(spec,), deps=DEPS, errors=TextErrors(), audit=audit)
    server.calls = CallsInFlight()
    writer = Principal(tenant="t", subject="alice", scopes=frozenset({WRITE}), via=Via.api_key)
    with access.acting_as(writer), anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.call_tool, "toy_held", {"text": "late", "brain": "notes"})
            await anyio.to_thread.run_sync(started.wait, 10)
            scope.cancel()  # the session's end, or the server's stop
    assert audit.calls == []  # the caller is gone; the handler still runs
    release.set()
    assert server.calls.wait(10)  # counted until its answer is settled
    assert [(name, cast(EchoArgs, args).text) for name, args, _ in audit.calls] == (
        [("toy_held", "late")] if audited else []
    )
    assert principals == (["alice"] if audited else [])
