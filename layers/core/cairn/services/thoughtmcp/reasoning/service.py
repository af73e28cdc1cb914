"""ThoughtMCP's reasoning tools (think, analyze, ponder, breakdown) over Cairn's ports.

Offline (only the extractive generator), the deterministic rules of this package answer and every
result says `method: "rule-based"`, `model: null`. With a language model configured, the model
answers each tool (each parallel stream is its own call, all four at once), its JSON validated
with one repair attempt (llm.py), and the result says `method: "language-model"` and the model's
id; a model that cannot answer is `ReasoningFailed`, never a silent fallback to the rules. A problem
or context text over MAX_TEXT characters (metacognition/limits.py) is refused before any is read.
docs/REASONING.md describes both paths.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC
from typing import Any, Final, cast

from pydantic import ValidationError

from cairn.domain.errors import InvalidInput
from cairn.domain.js_text import js_blank, js_trim
from cairn.ports.clock import Clock, SystemClock
from cairn.ports.generator import Generator, Passage
from cairn.services.memory.model_calls import failure_reason, offline
from cairn.services.thoughtmcp.metacognition.limits import check_texts
from cairn.services.thoughtmcp.reasoning import frameworks, rules, steps
from cairn.services.thoughtmcp.reasoning.context import (
    MemoryContext,
    RelevantMemory,
    fetch_memories,
    memories_used,
)
from cairn.services.thoughtmcp.reasoning.decompose import (
    Edge,
    Tree,
    decompose,
    domain_of,
    name_of,
    topological,
)
from cairn.services.thoughtmcp.reasoning.llm import ReasoningFailed, ask, passages
from cairn.services.thoughtmcp.reasoning.models import (
    AlternativeFramework,
    AnalysisOutcome,
    AnalyzeReply,
    AnalyzeResult,
    BreakdownReply,
    BreakdownResult,
    Dependency,
    FrameworkBrief,
    FrameworkInfo,
    MemoryUsed,
    Method,
    ParallelResult,
    ReasoningContext,
    SelectionInfo,
    StreamName,
    StreamReply,
    SubProblem,
    ThinkReply,
    ThinkResult,
    described,
    dump,
    graph_of,
)
from cairn.services.thoughtmcp.reasoning.parallel import Status, StreamRun, merge, run_streams
from cairn.services.thoughtmcp.reasoning.rules import STREAMS, Reading, StreamOutput

TIMEOUT_S: Final = 60.0
MODES: Final = (*STREAMS, "parallel")
MAX_DEPTH: Final = 5
PONDER_TIMEOUT_MS: Final = (1000, 60000)
MAX_RULE_CHARS: Final = 20_000  # the rules read this much of a problem

_STREAM_TASKS: Final = {
    "analytical": "Reason analytically: split the problem into its parts, name the quantities, constraints "
    "and goals, and conclude which part to work on first and why.",
    "creative": "Reason creatively: reframe the problem (invert it, combine parts, drop a constraint, change "
    "the scale) and conclude with the most promising alternative approach.",
    "critical": "Reason critically: find the unstated assumptions, missing evidence, hedged or absolute "
    "claims and risks, ask the counter-questions, and conclude with the weakest point.",
    "synthetic": "Reason synthetically: connect the goals and constraints into one ordered plan, and "
    "conclude with that plan.",
}
_THINK_SHAPE: Final = (
    '{"conclusion": "one or two sentences", "reasoning": ["each step of the reasoning"], '
    '"insights": ["each insight, one sentence"], "confidence": 0.0 to 1.0}'
)
_STREAM_SHAPE: Final = (
    '{"conclusion": "one or two sentences", "reasoning": ["each step"], "insights": ["each insight"], '
    '"recommendations": ["each recommended action"], "risks": ["each risk or concern, [] if none"], '
    '"confidence": 0.0 to 1.0}'
)
_ANALYZE_SHAPE: Final = (
    '{"conclusion": "one or two sentences", "steps": ["<step name>: <its result for this problem>", ...], '
    '"insights": ["each insight"], "confidence": 0.0 to 1.0}'
)
_BREAKDOWN_SHAPE: Final = (
    '{"subProblems": [{"id": "p1", "name": "short name", "description": "what must be solved", '
    '"details": "why it matters or how to approach it", "depth": 1, "parent": null, "domain": "one word"}, '
    '{"id": "p1-1", ..., "depth": 2, "parent": "p1"}], '
    '"dependencies": [{"from": "id done first", "to": "id done after it", "type": "hierarchical|sequential|'
    'prerequisite"}]}'
)


class ReasoningService:
    def __init__(
        self,
        generator: Generator,
        memories: MemoryContext | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        clock: Clock | None = None,
    ) -> None:
        self.generator = generator
        self.memories = memories
        self.timeout_s = timeout_s
        self.clock = clock or SystemClock()

    @property
    def uses_model(self) -> bool:
        return not offline(self.generator)

    def think(
        self,
        problem: str,
        mode: str,
        context: ReasoningContext | Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> dict[str, Any]:
        """think: one stream (analytical, creative, critical, synthetic) or all four (parallel)."""
        start = time.monotonic()
        problem, ctx = _problem(problem), _context(context)
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}")
        found = fetch_memories(self.memories, user_id, problem)
        if mode == "parallel":
            return self._parallel(problem, ctx, found, budget_s=self.timeout_s, start=start, tool="think")
        if self.uses_model:
            task = f"{_STREAM_TASKS[mode]} Reply as {_THINK_SHAPE}."
            reply = ask(
                self.generator,
                "think",
                task,
                ThinkReply,
                self._passages(problem, ctx, found),
                deadline=start + self.timeout_s,
            )
            conclusion, reasoning, insights, confidence = (
                reply.conclusion,
                reply.reasoning,
                reply.insights,
                reply.confidence,
            )
        else:
            output = rules.think(_reading(problem, ctx, found), mode)
            conclusion, reasoning, insights, confidence = (
                output.conclusion,
                output.reasoning,
                output.insights,
                output.confidence,
            )
        method, model = self._honesty()
        return dump(
            ThinkResult(
                mode=cast(StreamName, mode),
                conclusion=conclusion,
                reasoning=reasoning,
                insights=insights,
                confidence=confidence,
                processing_time=_ms(start),
                memories_used=_used(found),
                method=method,
                model=model,
            )
        )

    def ponder(
        self,
        problem: str,
        timeout_ms: int = 30000,
        context: ReasoningContext | Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> dict[str, Any]:
        """ponder: the four streams at once within `timeout_ms`; streams past it are reported."""
        start = time.monotonic()
        problem, ctx = _problem(problem), _context(context)
        low, high = PONDER_TIMEOUT_MS
        if (
            isinstance(timeout_ms, bool)
            or not isinstance(timeout_ms, int | float)
            or not low <= timeout_ms <= high
        ):
            raise InvalidInput(f"timeout must be between {low} and {high} milliseconds")
        found = fetch_memories(self.memories, user_id, problem)
        return self._parallel(problem, ctx, found, budget_s=timeout_ms / 1000, start=start, tool="ponder")

    def analyze(
        self,
        problem: str,
        preferred_framework: str | None = None,
        context: ReasoningContext | Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> dict[str, Any]:
        """analyze: the framework the problem's features select (or the preferred one), its steps run."""
        start = time.monotonic()
        problem, ctx = _problem(problem), _context(context)
        if preferred_framework is not None and preferred_framework not in frameworks.BY_ID:
            raise InvalidInput(f"preferredFramework must be one of {', '.join(frameworks.BY_ID)}")
        found = fetch_memories(self.memories, user_id, problem)
        selection = frameworks.select(" ".join([problem, ctx.background or ""]), preferred_framework)
        framework = selection.framework
        if self.uses_model:
            names = "; ".join(f"{i}. {name}" for i, (name, _) in enumerate(framework.steps, 1))
            task = (
                f"Analyze the problem with the {framework.name} framework ({framework.description}). "
                f"Run its steps in order, each with its result for this problem: {names}. "
                f"Then conclude. Reply as {_ANALYZE_SHAPE}."
            )
            reply = ask(
                self.generator,
                "analyze",
                task,
                AnalyzeReply,
                self._passages(problem, ctx, found),
                deadline=start + self.timeout_s,
            )
            outcome = (reply.conclusion, reply.steps, reply.insights, reply.confidence)
        else:
            reading = _reading(problem, ctx, found)
            ran = steps.run(framework, reading)
            results = [line.split(": ", 1)[1] for line in ran]
            insights = [r for r in results[1:-1] if not r.startswith("No ")][:3] or results[1:2]
            confidence = round(min(0.95, reading.base_confidence * (0.75 + 0.25 * selection.confidence)), 2)
            outcome = (f"{framework.name}: {results[-1]}", ran, insights, confidence)
        method, model = self._honesty()
        return dump(
            AnalyzeResult(
                framework=FrameworkInfo(
                    id=framework.id, name=framework.name, description=framework.description
                ),
                selection=SelectionInfo(
                    confidence=selection.confidence,
                    reason=selection.reason,
                    is_hybrid=bool(selection.hybrid),
                    hybrid_frameworks=list(selection.hybrid) or None,
                ),
                result=AnalysisOutcome(
                    conclusion=outcome[0],
                    steps=outcome[1],
                    insights=outcome[2],
                    confidence=outcome[3],
                    processing_time=_ms(start),
                ),
                alternatives=[
                    AlternativeFramework(framework=FrameworkBrief(id=f.id, name=f.name), reason=why)
                    for f, why in selection.alternatives
                ],
                memories_used=_used(found),
                method=method,
                model=model,
            )
        )

    def breakdown(
        self,
        problem: str,
        max_depth: float = 3,
        context: ReasoningContext | Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> dict[str, Any]:
        """breakdown: the problem's sub-problems to `max_depth`, dependencies, execution order."""
        start = time.monotonic()
        problem, ctx = _problem(problem), _context(context)
        whole = not isinstance(max_depth, bool) and isinstance(max_depth, int | float) and max_depth % 1 == 0
        if not whole or not 1 <= max_depth <= MAX_DEPTH:
            raise InvalidInput(f"maxDepth must be an integer between 1 and {MAX_DEPTH}")
        max_depth = int(max_depth)
        found = fetch_memories(self.memories, user_id, problem)
        if self.uses_model:
            task = (
                f"Decompose the problem into a tree of sub-problems at most {max_depth} levels deep: "
                "the first entry is the whole problem (depth 1, parent null), every other entry names "
                "its parent, one level up, listed after it. The context's goals and "
                "constraints may become sub-problems. "
                f"Give the dependencies between sub-problems (no cycles). Reply as {_BREAKDOWN_SHAPE}."
            )
            reply = ask(
                self.generator,
                "breakdown",
                task,
                BreakdownReply,
                self._passages(problem, ctx, found),
                deadline=start + self.timeout_s,
                validation_context={"max_depth": max_depth},
            )
            subs = [SubProblem(**s.model_dump()) for s in reply.sub_problems]
            deps = list(reply.dependencies)
            order = topological([s.id for s in subs], [Edge(d.source, d.to, d.type) for d in deps])
        else:
            subs, deps, order = _rule_breakdown(problem[:MAX_RULE_CHARS], max_depth, ctx)
        method, model = self._honesty()
        deps = described(deps, subs)
        return dump(
            BreakdownResult(
                problem=problem,
                sub_problems=subs,
                dependencies=deps,
                graph=graph_of(subs, deps),
                execution_order=order,
                total_sub_problems=len(subs),
                max_depth=max_depth,
                memories_used=_used(found),
                method=method,
                model=model,
            )
        )

    def _parallel(
        self,
        problem: str,
        ctx: ReasoningContext,
        found: list[RelevantMemory],
        *,
        budget_s: float,
        start: float,
        tool: str,
    ) -> dict[str, Any]:
        if self.uses_model:
            given = self._passages(problem, ctx, found)

            def work(name: str, deadline: float) -> StreamOutput:
                task = (
                    f"You are the {name} stream of a parallel reasoning. {_STREAM_TASKS[name]} "
                    f"Reply as {_STREAM_SHAPE}."
                )
                reply = ask(
                    self.generator, f"{tool} ({name} stream)", task, StreamReply, given, deadline=deadline
                )
                return StreamOutput(
                    reply.conclusion,
                    reply.reasoning,
                    reply.insights,
                    reply.recommendations,
                    reply.risks,
                    reply.confidence,
                )
        else:
            reading = _reading(problem, ctx, found)

            def work(name: str, deadline: float) -> StreamOutput:
                return rules.think(reading, name)

        runs = run_streams(work, budget_s=max(0.0, budget_s - (time.monotonic() - start)), classify=_classify)
        try:
            detected_at = self.clock.now().astimezone(UTC).isoformat(timespec="milliseconds")
            merged = merge(runs, ctx.constraints, detected_at=detected_at.replace("+00:00", "Z"))
        except ValueError:
            raise ReasoningFailed(f"{tool}: no reasoning stream completed ({_outcomes(runs)})") from None
        method, model = self._honesty()
        return dump(
            ParallelResult(
                conclusion=merged.conclusion,
                insights=merged.insights,
                recommendations=merged.recommendations,
                conflicts=merged.conflicts,
                confidence=merged.confidence,
                quality=merged.quality,
                streams=[run.report() for run in runs],
                processing_time=_ms(start),
                memories_used=_used(found),
                method=method,
                model=model,
            )
        )

    def _passages(self, problem: str, ctx: ReasoningContext, found: list[RelevantMemory]) -> list[Passage]:
        lists = {"Constraints": ctx.constraints, "Goals": ctx.goals}
        return passages(problem, ctx.background, lists, [m.content for m in found])

    def _honesty(self) -> tuple[Method, str | None]:
        if self.uses_model:
            return "language-model", self.generator.model_id
        return "rule-based", None


def _problem(problem: str) -> str:
    if not isinstance(problem, str) or js_blank(problem):
        raise InvalidInput("problem is required")
    check_texts(problem=problem)
    return js_trim(problem)


def _context(context: ReasoningContext | Mapping[str, Any] | None) -> ReasoningContext:
    if context is None:
        return ReasoningContext()
    if isinstance(context, ReasoningContext):
        ctx = context
    else:
        try:
            ctx = ReasoningContext.model_validate(dict(context))
        except (ValidationError, TypeError, ValueError):
            raise InvalidInput(
                "context must hold background (text), constraints and goals (lists of text)"
            ) from None
    texts = {"background": ctx.background, "constraints": ctx.constraints, "goals": ctx.goals}
    check_texts(**{f"context.{name}": value for name, value in texts.items()})
    return ctx


def _reading(problem: str, ctx: ReasoningContext, found: list[RelevantMemory]) -> Reading:
    return rules.read(
        problem[:MAX_RULE_CHARS],
        background=ctx.background,
        goals=ctx.goals,
        constraints=ctx.constraints,
        memories=[m.content for m in found],
    )


def _rule_breakdown(
    problem: str, max_depth: int, ctx: ReasoningContext
) -> tuple[list[SubProblem], list[Dependency], list[str]]:
    tree: Tree = decompose(
        problem, max_depth=max_depth, goals=tuple(ctx.goals), constraints=tuple(ctx.constraints)
    )
    names = {n.id: name_of(n.text) for n in tree.nodes}
    parts = _part_numbers(tree)
    before: dict[str, list[str]] = {}
    for edge in tree.edges:
        if edge.type != "hierarchical":
            before.setdefault(edge.target, []).append(names[edge.source])
    domains: dict[str, str] = {}
    subs: list[SubProblem] = []
    for node in tree.nodes:
        domains[node.id] = domain_of(node.text, domains.get(node.parent or "", "general"))
        if node.parent is None:
            details = "The whole problem as stated"
        elif node.origin == "goal":
            details = "A goal from the context: the work is done when this holds"
        elif node.origin == "constraint":
            details = "A constraint from the context: every other part must respect it"
        else:
            number, count = parts[node.id]
            details = f"Part {number} of {count} of '{names[node.parent]}'"
        if node.id in before:
            details += "; comes after " + ", ".join(f"'{name}'" for name in before[node.id])
        subs.append(
            SubProblem(
                id=node.id,
                name=names[node.id],
                description=node.text,
                details=details,
                depth=node.depth,
                parent=node.parent,
                domain=domains[node.id],
            )
        )
    deps = [Dependency(**{"from": e.source, "to": e.target, "type": e.type}) for e in tree.edges]
    return subs, deps, tree.order


def _part_numbers(tree: Tree) -> dict[str, tuple[int, int]]:
    """Each problem piece's number among its parent's problem pieces, and how many they are."""
    out: dict[str, tuple[int, int]] = {}
    for node in tree.nodes:
        pieces = [c for c in node.children if c.origin == "problem"]
        out.update((c.id, (i, len(pieces))) for i, c in enumerate(pieces, 1))
    return out


def _used(found: list[RelevantMemory]) -> list[MemoryUsed]:
    return [MemoryUsed.model_validate(m) for m in memories_used(found)]


def _classify(exc: BaseException) -> tuple[Status, str]:
    if isinstance(exc, ReasoningFailed):
        return ("timeout" if exc.timed_out else "failed"), exc.message
    if isinstance(exc, TimeoutError):
        return "timeout", "no result in time"
    return "failed", failure_reason(exc)


def _outcomes(runs: list[StreamRun]) -> str:
    return ", ".join(f"{run.name} {run.status}" for run in runs)


def _ms(start: float) -> int:
    return round((time.monotonic() - start) * 1000)
