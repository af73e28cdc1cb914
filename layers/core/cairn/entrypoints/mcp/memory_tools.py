"""memory_extract, memory_reflect and memory_consolidate on the canonical surface (seed 000)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult
from pydantic import ConfigDict, Field, RootModel

from cairn.entrypoints.mcp.tools import BrainRef, SurfaceDeps, ToolArgs, make_tool, ok_result
from cairn.entrypoints.wire_memory import (
    ConsolidateResponse,
    ExtractMessages,
    ExtractSessionResult,
    ExtractTranscriptResult,
    JobStarted,
    ReflectResponse,
)
from cairn.services.extraction import Said


class ExtractArgs(ToolArgs):
    messages: Annotated[ExtractMessages, Field(description="The conversation, oldest message first.")]
    brain: BrainRef = None
    actor_id: Annotated[
        str | None, Field(min_length=1, max_length=256, description="Who the memories are about.")
    ] = None
    session_id: Annotated[
        str | None, Field(min_length=1, max_length=128, description="Append to this session instead.")
    ] = None


class ReflectArgs(ToolArgs):
    session_id: Annotated[str, Field(min_length=1, max_length=128, description="The session to close.")]
    brain: BrainRef = None


class ConsolidateArgs(ToolArgs):
    brain: BrainRef = None


class ExtractOutput(RootModel[ExtractSessionResult | ExtractTranscriptResult]):
    model_config = ConfigDict(json_schema_extra={"type": "object"})


class MemoryTools:
    def __init__(self, deps: SurfaceDeps) -> None:
        self.c = deps.container

    def extract(self, a: ExtractArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        said = [Said(m.role, m.content) for m in a.messages]
        if a.session_id:
            messages, _ = self.c.extraction.submit_session(brain, a.session_id, said, a.actor_id)
            text = f"Appended {len(messages)} message(s) to session {a.session_id}; fact extraction queued."
            return ok_result(text, ExtractSessionResult.of(messages))
        doc, _ = self.c.extraction.submit_transcript(brain, said, a.actor_id)
        text = f"Stored transcript {doc.id} at {doc.path} ({len(said)} messages); fact extraction queued."
        return ok_result(text, ExtractTranscriptResult.of(doc))

    def reflect(self, a: ReflectArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        response = ReflectResponse.of(self.c.reflection.reflect(brain, a.session_id))
        return ok_result(response.summary(), response)

    def consolidate(self, a: ConsolidateArgs) -> CallToolResult:
        brain = self.c.brains.resolve(a.brain)
        job = JobStarted.of(self.c.consolidation.queue(brain))
        text = f"Consolidation of {brain.slug} queued as job {job.job_id} (GET /v1/jobs/{job.job_id})."
        return ok_result(text, ConsolidateResponse(result=job))


def memory_tools(deps: SurfaceDeps) -> list[Tool]:
    t = MemoryTools(deps)
    return [
        make_tool(
            "memory_extract",
            "Submit a conversation transcript so the server can asynchronously extract memorable facts. If "
            "session_id is provided the messages are appended to that session; otherwise a transcript "
            "document is created.",
            ExtractArgs,
            t.extract,
            ExtractOutput,
        ),
        make_tool(
            "memory_reflect",
            "Close a session and trigger server-side reflection over its messages.",
            ReflectArgs,
            t.reflect,
            ReflectResponse,
        ),
        make_tool(
            "memory_consolidate",
            "Trigger a consolidation pass on the brain (compile summaries, promote stable notes, prune stale "
            "episodic memory).",
            ConsolidateArgs,
            t.consolidate,
            ConsolidateResponse,
        ),
    ]
