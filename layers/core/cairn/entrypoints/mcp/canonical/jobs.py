"""memory_extract, memory_reflect and memory_consolidate: hand a conversation or a brain to the
background work (extraction, reflection, consolidation) and say what was queued."""

from __future__ import annotations

from mcp_types import CallToolResult

from cairn.auth.principal import WRITE
from cairn.entrypoints.mcp.canonical import descriptions
from cairn.entrypoints.mcp.canonical.args import ConsolidateArgs, ExtractArgs, ReflectArgs
from cairn.entrypoints.mcp.canonical.outputs import ExtractOutput
from cairn.entrypoints.mcp.canonical.services import CanonicalServices
from cairn.entrypoints.mcp.kit import AuditTarget, SurfaceDeps, ToolSpec, ok_result
from cairn.entrypoints.wire_memory import (
    ConsolidateResponse,
    ExtractSessionResult,
    ExtractTranscriptResult,
    JobStarted,
    ReflectResponse,
)
from cairn.services.memory.extraction import Said


def extract(deps: SurfaceDeps[CanonicalServices], a: ExtractArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    said = [Said(m.role, m.content) for m in a.messages]
    if a.session_id:
        messages, _ = c.extraction.submit_session(brain, a.session_id, said, a.actor_id)
        text = f"Appended {len(messages)} message(s) to session {a.session_id}; fact extraction queued."
        return ok_result(text, ExtractSessionResult.of(messages))
    doc, _ = c.extraction.submit_transcript(brain, said, a.actor_id)
    text = f"Stored transcript {doc.id} at {doc.path} ({len(said)} messages); fact extraction queued."
    return ok_result(text, ExtractTranscriptResult.of(doc))


def reflect(deps: SurfaceDeps[CanonicalServices], a: ReflectArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    response = ReflectResponse.of(c.reflection.reflect(brain, a.session_id))
    return ok_result(response.summary(), response)


def consolidate(deps: SurfaceDeps[CanonicalServices], a: ConsolidateArgs) -> CallToolResult:
    c = deps.services
    brain = c.brains.resolve(a.brain)
    job = JobStarted.of(c.consolidation.queue(brain))
    text = f"Consolidation of {brain.slug} queued as job {job.job_id} (GET /v1/jobs/{job.job_id})."
    return ok_result(text, ConsolidateResponse(result=job))


MEMORY_EXTRACT = ToolSpec(
    name="memory_extract",
    description=descriptions.EXTRACT,
    args=ExtractArgs,
    output=ExtractOutput,
    scope=WRITE,
    handler=extract,
    audit=lambda a, _: AuditTarget(brain=a.brain, target=a.session_id),
)

MEMORY_REFLECT = ToolSpec(
    name="memory_reflect",
    description=descriptions.REFLECT,
    args=ReflectArgs,
    output=ReflectResponse,
    scope=WRITE,
    handler=reflect,
    audit=lambda a, _: AuditTarget(brain=a.brain, target=a.session_id),
)

MEMORY_CONSOLIDATE = ToolSpec(
    name="memory_consolidate",
    description=descriptions.CONSOLIDATE,
    args=ConsolidateArgs,
    output=ConsolidateResponse,
    scope=WRITE,
    handler=consolidate,
    audit=lambda a, _: AuditTarget(brain=a.brain),
)
