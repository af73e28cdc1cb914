"""The reasoning tools' data: what each tool returns (camelCase on the wire) and what a language
model must reply for it (validated before anything of it is returned).

Every result carries `method` ("rule-based" | "language-model") and `model` (None, or the id of
the model whose reply validated): a rule-based result never claims a model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from cairn.services.thoughtmcp.reasoning.decompose import Edge, topological

Method = Literal["rule-based", "language-model"]
StreamName = Literal["analytical", "creative", "critical", "synthetic"]
ThinkMode = Literal["analytical", "creative", "critical", "synthetic", "parallel"]
Score = Field(ge=0.0, le=1.0)


class Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ReasoningContext(Camel):
    """The tools' optional `context`."""

    background: str | None = None
    constraints: list[str] = Field(default_factory=list)
    goals: list[str] = Field(default_factory=list)


class MemoryUsed(Camel):
    id: str
    content: str
    primary_sector: str
    relevance_score: float = Score


class Honest(Camel):
    method: Method
    model: str | None

    @model_validator(mode="after")
    def _model_only_with_a_model(self) -> Honest:
        if (self.method == "rule-based") != (self.model is None):
            raise ValueError("a rule-based result names no model; a language-model result names its model")
        return self


class ThinkResult(Honest):
    """think in one mode (analytical, creative, critical, synthetic)."""

    mode: StreamName
    conclusion: str
    reasoning: list[str]
    insights: list[str]
    confidence: float = Score
    processing_time: int
    status: Literal["completed"] = "completed"
    memories_used: list[MemoryUsed] = Field(default_factory=list)


class MergedInsight(Camel):
    content: str
    sources: list[StreamName]
    importance: float = Score
    confidence: float = Score
    evidence: list[str] = Field(default_factory=list)  # the source streams' steps behind it


class Recommendation(Camel):
    description: str
    priority: int = Field(ge=1)  # 1 = do first
    confidence: float = Score
    sources: list[StreamName]
    rationale: str  # the seed's shape: one sentence (the real server sends a list)
    concerns: list[str] = Field(default_factory=list)  # the critical stream's risks that bear on it


class ConflictClaim(Camel):
    """One side of a conflict: what a stream claimed, and the step of its reasoning behind it."""

    stream_id: str
    stream_type: StreamName
    claim: str
    reasoning: str
    confidence: float = Score


class Resolution(Camel):
    approach: str
    steps: list[str]
    considerations: list[str]
    recommended_action: str


class Conflict(Camel):
    id: str
    type: str
    description: str
    severity: float = Score  # the seed's shape: a number (the real server sends low..critical)
    source_streams: list[StreamName]
    evidence: list[ConflictClaim] = Field(default_factory=list)
    detected_at: str | None = None
    resolution_framework: Resolution | None = None


class StreamReport(Camel):
    name: StreamName
    status: Literal["completed", "timeout", "failed"]
    processing_time: int
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    error: str | None = None


class ParallelResult(Honest):
    """think in parallel mode, and ponder: the four streams merged."""

    conclusion: str
    insights: list[MergedInsight]
    recommendations: list[Recommendation]
    conflicts: list[Conflict]
    confidence: float = Score
    quality: float = Score
    streams: list[StreamReport]
    processing_time: int
    memories_used: list[MemoryUsed] = Field(default_factory=list)


class FrameworkInfo(Camel):
    id: str
    name: str
    description: str


class FrameworkBrief(Camel):
    id: str
    name: str


class SelectionInfo(Camel):
    confidence: float = Score
    reason: str
    is_hybrid: bool
    hybrid_frameworks: list[str] | None = None


class AnalysisOutcome(Camel):
    conclusion: str
    steps: list[str]
    insights: list[str]
    confidence: float = Score
    processing_time: int


class AlternativeFramework(Camel):
    framework: FrameworkBrief
    reason: str


class AnalyzeResult(Honest):
    framework: FrameworkInfo
    selection: SelectionInfo
    result: AnalysisOutcome
    alternatives: list[AlternativeFramework]
    memories_used: list[MemoryUsed] = Field(default_factory=list)


class SubProblem(Camel):
    id: str
    name: str
    description: str
    details: str
    depth: int = Field(ge=1, le=5)
    parent: str | None = None
    domain: str


class Dependency(Camel):
    source: str = Field(alias="from")
    to: str
    type: str
    description: str | None = None


class GraphNode(Camel):
    id: str
    label: str
    name: str
    details: str
    domain: str


class GraphEdge(Camel):
    source: str = Field(alias="from")
    to: str
    label: str
    description: str


class Graph(Camel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]


_EDGE_SENTENCES: dict[str, str] = {
    "hierarchical": "'{to}' is part of '{source}'",
    "sequential": "'{to}' starts once '{source}' is done",
    "prerequisite": "'{to}' needs '{source}' first",
}


def described(deps: list[Dependency], subs: list[SubProblem]) -> list[Dependency]:
    """The dependencies, each with a sentence naming both sub-problems (a model's own kept)."""
    names = {s.id: s.name for s in subs}
    out: list[Dependency] = []
    for d in deps:
        sentence = _EDGE_SENTENCES.get(d.type, "'{to}' depends on '{source}'")
        text = d.description or sentence.format(
            source=names.get(d.source, d.source), to=names.get(d.to, d.to)
        )
        out.append(d.model_copy(update={"description": text}))
    return out


def graph_of(subs: list[SubProblem], deps: list[Dependency]) -> Graph:
    return Graph(
        nodes=[
            GraphNode(id=s.id, label=s.name, name=s.name, details=s.details, domain=s.domain) for s in subs
        ],
        edges=[
            GraphEdge(**{"from": d.source}, to=d.to, label=d.type, description=d.description or d.type)
            for d in deps
        ],
    )


class BreakdownResult(Honest):
    problem: str
    sub_problems: list[SubProblem]
    dependencies: list[Dependency]
    graph: Graph
    execution_order: list[str]
    total_sub_problems: int
    max_depth: int = Field(ge=1, le=5)
    memories_used: list[MemoryUsed] = Field(default_factory=list)


# What a language model must reply, per tool (the service adds timing, memories and honesty).


class ThinkReply(Camel):
    conclusion: str = Field(min_length=1)
    reasoning: list[str] = Field(min_length=1)
    insights: list[str] = Field(min_length=1)
    confidence: float = Score


class StreamReply(ThinkReply):
    recommendations: list[str] = Field(min_length=1)
    risks: list[str] = Field(default_factory=list)


class AnalyzeReply(Camel):
    conclusion: str = Field(min_length=1)
    steps: list[str] = Field(min_length=1)
    insights: list[str] = Field(min_length=1)
    confidence: float = Score


class SubProblemReply(Camel):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    details: str = ""
    depth: int = Field(ge=1, le=5)
    parent: str | None = None
    domain: str = "general"


class BreakdownReply(Camel):
    """Checked against the request: ids unique, exactly one root (depth 1, no parent), every other
    sub-problem's parent an earlier one at the depth above, depth within maxDepth, dependencies
    between known ids and without a cycle."""

    sub_problems: list[SubProblemReply] = Field(min_length=1)
    dependencies: list[Dependency] = Field(default_factory=list)

    @field_validator("sub_problems")
    @classmethod
    def _tree(cls, value: list[SubProblemReply], info: ValidationInfo) -> list[SubProblemReply]:
        max_depth = (info.context or {}).get("max_depth", 5)
        depth_of: dict[str, int] = {}
        for i, sub in enumerate(value):
            if sub.id in depth_of:
                raise ValueError(f"subProblems[{i}].id repeats an earlier id")
            if sub.depth > max_depth:
                raise ValueError(f"subProblems[{i}].depth is deeper than maxDepth {max_depth}")
            if i == 0:
                if sub.depth != 1 or sub.parent is not None:
                    raise ValueError("subProblems[0] must be the root: depth 1 and no parent")
            elif sub.parent not in depth_of or depth_of[sub.parent] != sub.depth - 1:
                raise ValueError(f"subProblems[{i}].parent must name an earlier sub-problem one level up")
            depth_of[sub.id] = sub.depth
        return value

    @model_validator(mode="after")
    def _dependencies(self) -> BreakdownReply:
        ids = {s.id for s in self.sub_problems}
        for i, dep in enumerate(self.dependencies):
            if dep.source not in ids or dep.to not in ids:
                raise ValueError(f"dependencies[{i}] names an id that is not a sub-problem")
        edges = [Edge(d.source, d.to, d.type) for d in self.dependencies]
        order = topological([s.id for s in self.sub_problems], edges)
        position = {node: i for i, node in enumerate(order)}
        if any(position[e.source] > position[e.target] for e in edges):
            raise ValueError("dependencies form a cycle")
        return self


def dump(result: BaseModel) -> dict[str, Any]:
    """The json-ready `data` of a result: camelCase, optional fields left out when empty, but
    `model` always present (null for a rule-based result)."""
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, Honest):
        data["model"] = result.model
    return data
