"""The services the ThoughtMCP surface's tools use, taken from the Container once."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.container import Container
from cairn.entrypoints.mcp.kit.surface import services_of
from cairn.services.brains import BrainService
from cairn.services.thoughtmcp.memories import ThoughtMemories
from cairn.services.thoughtmcp.metacognition import MetacognitionService
from cairn.services.thoughtmcp.reasoning.service import ReasoningService


@dataclass(frozen=True)
class ThoughtServices:
    brains: BrainService
    thoughts: ThoughtMemories
    reasoning: ReasoningService
    metacognition: MetacognitionService
    thoughtmcp_brain: str | None
    """The brain ThoughtMCP's memories live in (CAIRN_THOUGHTMCP_BRAIN); None: the marked one."""


def thought_services(c: Container) -> ThoughtServices:
    return services_of(ThoughtServices, c, thoughtmcp_brain=c.options.surfaces.thoughtmcp_brain)
