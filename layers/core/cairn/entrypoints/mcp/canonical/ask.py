"""memory_ask: retrieve, generate, stream the answer as progress.

The seed's progress-token contract, to the letter: with `_meta.progressToken`, one
`notifications/progress` per answer_delta (progress 0, 1, 2, …; message = the delta); without a
token, none (the SDK's report_progress is a no-op then). The reply carries `{answer, citations,
retrieved}`; an error event from the stream ends it with a text-only error result
`{code, message, retryable}`.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver.context import Context
from mcp_types import CallToolResult, TextContent

from cairn import off_loop
from cairn.auth.principal import READ
from cairn.entrypoints.mcp.canonical import descriptions
from cairn.entrypoints.mcp.canonical.args import AskArgs
from cairn.entrypoints.mcp.canonical.outputs import AskResult
from cairn.entrypoints.mcp.canonical.services import CanonicalServices
from cairn.entrypoints.mcp.kit import SurfaceDeps, ToolSpec


async def ask(deps: SurfaceDeps[CanonicalServices], a: AskArgs, ctx: Context[Any, Any]) -> CallToolResult:
    container = deps.services
    brain = await off_loop.run_sync(container.brains.resolve, a.brain)
    retrieved: list[dict[str, Any]] = []
    citations: list[dict[str, Any]] = []
    answer = ""
    emitted = 0
    async for event in container.ask.ask(brain, a.query, top_k=a.top_k or 8):
        if event.type == "retrieve":
            retrieved = event.data["chunks"]
        elif event.type == "answer_delta":
            await ctx.report_progress(emitted, None, event.data["delta"])
            emitted += 1
        elif event.type == "citation":
            citations.append(event.data)
        elif event.type == "done":
            answer = event.data["answer"]
        elif event.type == "error":
            text = json.dumps(event.data, ensure_ascii=False)
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    result = AskResult.model_validate({"answer": answer, "citations": citations, "retrieved": retrieved})
    return CallToolResult(
        content=[TextContent(type="text", text=answer)], structured_content=result.model_dump(mode="json")
    )


MEMORY_ASK = ToolSpec(
    name="memory_ask",
    description=descriptions.ASK,
    args=AskArgs,
    output=AskResult,
    scope=READ,
    streaming=ask,
)
