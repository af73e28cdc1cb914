"""memory_ask on the canonical surface: retrieve, generate, stream the answer as progress.

The seed's progress-token contract, to the letter: with `_meta.progressToken`, one
`notifications/progress` per answer_delta (progress 0, 1, 2, …; message = the delta); without a
token, none (the SDK's report_progress is a no-op then). The reply carries `{answer, citations,
retrieved}`; an error event from the stream ends it with a text-only error result
`{code, message, retryable}`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from cairn.entrypoints.mcp.tools import BrainRef, SurfaceDeps, ToolArgs, make_streaming_tool

DESCRIPTION = (
    "Ask a question grounded in the brain. Streams answer tokens as MCP progress notifications and "
    "returns the final answer with citations."
)


class AskArgs(ToolArgs):
    query: Annotated[str, Field(min_length=1, max_length=8192, description="The question.")]
    brain: BrainRef = None
    top_k: Annotated[int | None, Field(ge=1, le=50, description="Chunks to retrieve (default 8).")] = None


class AskCitationEvent(BaseModel):
    type: Literal["citation"] = "citation"
    chunk_id: str
    document_id: str
    answer_start: int = Field(ge=0)
    answer_end: int = Field(ge=0)
    quote: str


class RetrievedChunk(BaseModel):
    chunk_id: str
    document_id: str
    score: float
    preview: str = Field(max_length=512)


class AskResult(BaseModel):
    answer: str
    citations: list[AskCitationEvent]
    retrieved: list[RetrievedChunk]


def ask_tool(deps: SurfaceDeps) -> Tool:
    container = deps.container

    async def ask(a: AskArgs, ctx: Context[Any, Any]) -> CallToolResult:
        brain = await anyio.to_thread.run_sync(container.brains.resolve, a.brain)
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

    return make_streaming_tool("memory_ask", DESCRIPTION, AskArgs, ask, AskResult)
