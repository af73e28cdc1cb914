"""ThoughtMCP's reasoning tools (think, analyze, ponder, breakdown: services/thoughtmcp/reasoning/) and its
metacognitive tools (assess_confidence, detect_bias, detect_emotion, evaluate:
services/thoughtmcp/metacognition/), in the surface's envelope. With no language model configured every answer
is the rules' and says so (`method: "rule-based"`, `model: null`)."""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult

from cairn.auth.principal import READ
from cairn.entrypoints.mcp.kit import SurfaceDeps, ToolSpec
from cairn.entrypoints.mcp.thoughtmcp import args as a
from cairn.entrypoints.mcp.thoughtmcp import descriptions as d
from cairn.entrypoints.mcp.thoughtmcp.envelope import success
from cairn.entrypoints.mcp.thoughtmcp.services import ThoughtServices
from cairn.services.thoughtmcp.checks import check_user_id


def _context(ctx: a.ReasoningContext | None) -> dict[str, Any] | None:
    if ctx is None:
        return None
    return {"background": ctx.background, "constraints": ctx.constraints or [], "goals": ctx.goals or []}


def _user(user_id: str | None) -> str | None:
    if user_id is not None:
        check_user_id(user_id)  # the access rule is checked where its memories are read
    return user_id


def think(deps: SurfaceDeps[ThoughtServices], x: a.ThinkArgs) -> CallToolResult:
    r = deps.services.reasoning
    return success(r.think(x.problem, x.mode, context=_context(x.context), user_id=_user(x.userId)))


def analyze(deps: SurfaceDeps[ThoughtServices], x: a.AnalyzeArgs) -> CallToolResult:
    r = deps.services.reasoning
    data = r.analyze(x.problem, x.preferredFramework, context=_context(x.context), user_id=_user(x.userId))
    return success(data)


def ponder(deps: SurfaceDeps[ThoughtServices], x: a.PonderArgs) -> CallToolResult:
    r = deps.services.reasoning
    timeout = int(x.timeout) if x.timeout is not None else 30000
    return success(r.ponder(x.problem, timeout, context=_context(x.context), user_id=_user(x.userId)))


def breakdown(deps: SurfaceDeps[ThoughtServices], x: a.BreakdownArgs) -> CallToolResult:
    r = deps.services.reasoning
    depth = x.maxDepth if x.maxDepth is not None else 3  # 2.5 is refused there, never cut to 2
    return success(r.breakdown(x.problem, depth, context=_context(x.context), user_id=_user(x.userId)))


def assess_confidence(deps: SurfaceDeps[ThoughtServices], x: a.AssessArgs) -> CallToolResult:
    data, metadata = deps.services.metacognition.assess_confidence(x.reasoning, x.evidence, x.context)
    return success(data, metadata)


def detect_bias(deps: SurfaceDeps[ThoughtServices], x: a.BiasArgs) -> CallToolResult:
    data, metadata = deps.services.metacognition.detect_bias(x.reasoning, x.context)
    return success(data, metadata)


def detect_emotion(deps: SurfaceDeps[ThoughtServices], x: a.EmotionArgs) -> CallToolResult:
    include = x.includeDiscrete if x.includeDiscrete is not None else True
    data, metadata = deps.services.metacognition.detect_emotion(x.text, include)
    return success(data, metadata)


def evaluate(deps: SurfaceDeps[ThoughtServices], x: a.EvaluateArgs) -> CallToolResult:
    data, metadata = deps.services.metacognition.evaluate(
        x.reasoning,
        x.context,
        include_confidence=x.includeConfidence if x.includeConfidence is not None else True,
        include_bias=x.includeBias if x.includeBias is not None else True,
        include_emotion=bool(x.includeEmotion),
    )
    return success(data, metadata)


def spec(name: str, description: str, args: type[Any], handler: Any) -> ToolSpec[Any]:
    return ToolSpec(name=name, description=description, args=args, output=None, scope=READ, handler=handler)


REASONING_TOOLS: tuple[ToolSpec[Any], ...] = (
    spec(
        "think",
        d.THINK,
        a.ThinkArgs,
        think,
    ),
    spec(
        "analyze",
        d.ANALYZE,
        a.AnalyzeArgs,
        analyze,
    ),
    spec(
        "ponder",
        d.PONDER,
        a.PonderArgs,
        ponder,
    ),
    spec(
        "breakdown",
        d.BREAKDOWN,
        a.BreakdownArgs,
        breakdown,
    ),
    spec(
        "assess_confidence",
        d.ASSESS_CONFIDENCE,
        a.AssessArgs,
        assess_confidence,
    ),
    spec(
        "detect_bias",
        d.DETECT_BIAS,
        a.BiasArgs,
        detect_bias,
    ),
    spec(
        "detect_emotion",
        d.DETECT_EMOTION,
        a.EmotionArgs,
        detect_emotion,
    ),
    spec(
        "evaluate",
        d.EVALUATE,
        a.EvaluateArgs,
        evaluate,
    ),
)
