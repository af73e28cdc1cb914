"""The arguments of ThoughtMCP's tools as seed 004 lists them (names, types, enums, required fields,
advertised ranges), plus the three batch tools the real server registers.

Ranges are advertised, not enforced by the schema: like the real server, the tools judge values
themselves (a limit above 100 is capped, a minStrength outside 0..1 is a `success: false` answer
with ThoughtMCP's message), so the schema only rejects a value of the wrong JSON type. Booleans are
strict: `"soft": "yes"` is refused rather than read as true, and a number is never `true` or `false`.

A batch_remember item is checked on its own (BadItem), so one bad item is a failure in the
reply's `failures`, not a refusal of the whole batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from cairn.entrypoints.mcp.kit import ToolArgs
from cairn.services.thoughtmcp.models import INVALID_SECTOR

Sector = Literal["episodic", "semantic", "procedural", "emotional", "reflective"]
Mode = Literal["analytical", "creative", "critical", "synthetic", "parallel"]
FrameworkId = Literal[
    "scientific-method", "design-thinking", "systems-thinking", "critical-thinking",
    "creative-problem-solving", "root-cause-analysis", "first-principles", "scenario-planning",
]  # fmt: skip
USER = "User ID for memory isolation (required)"
SECTORS_DOC = "Memory sectors to search (default: all sectors)"
SOFT = "Soft delete (true) sets strength=0, hard delete (false) removes record (default: false)"
MODES = (
    "Reasoning mode: analytical (logical), creative (innovative), critical (skeptical), "
    "synthetic (holistic), parallel (all modes simultaneously)"
)
PREFERRED = "Preferred framework (optional, overrides automatic selection)"


def _not_a_flag(value: Any) -> Any:
    """A number refuses true and false, which pydantic's lax mode would read as 1 and 0 (and store)."""
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "Input should be a valid number")
    return value


Number = Annotated[float, BeforeValidator(_not_a_flag)]


def ranged(description: str | None, low: float | None = None, high: float | None = None) -> Any:
    extra: dict[str, Any] = {k: v for k, v in (("minimum", low), ("maximum", high)) if v is not None}
    return Field(description=description, json_schema_extra=extra or None)


class Open(BaseModel):
    """A nested object of the seed: unknown keys ignored, as the real server ignores them."""

    model_config = ConfigDict(extra="ignore")


class MemoryMetadata(Open):
    keywords: Annotated[
        list[str] | None, Field(description="Keywords for search (auto-extracted if not provided)")
    ] = None
    tags: Annotated[list[str] | None, Field(description="Tags for categorization")] = None
    category: Annotated[str | None, Field(description="Category for grouping")] = None
    context: Annotated[str | None, Field(description="Additional context information")] = None
    importance: Annotated[Number | None, ranged("Importance score (0-1, default 0.5)", 0, 1)] = None


class MetadataUpdate(Open):
    keywords: list[str] | None = None
    tags: list[str] | None = None
    category: str | None = None
    context: str | None = None
    importance: Annotated[Number | None, ranged(None, 0, 1)] = None


class MetadataFilter(Open):
    keywords: list[str] | None = None
    tags: list[str] | None = None
    category: str | None = None


class DateRange(Open):
    start: Annotated[str | None, Field(json_schema_extra={"format": "date-time"})] = None
    end: Annotated[str | None, Field(json_schema_extra={"format": "date-time"})] = None


class ReasoningContext(Open):
    background: Annotated[str | None, Field(description="Background information")] = None
    constraints: Annotated[list[str] | None, Field(description="Constraints to consider")] = None
    goals: Annotated[list[str] | None, Field(description="Goals to achieve")] = None


class RememberArgs(ToolArgs):
    content: Annotated[str, Field(description="Memory content to store (required, non-empty)")]
    userId: Annotated[str, Field(description=USER)]
    sessionId: Annotated[str, Field(description="Session ID for context tracking (required)")]
    primarySector: Annotated[Sector, Field(description="Primary memory sector")]
    metadata: Annotated[
        MemoryMetadata | None, Field(description="Optional metadata for classification and search")
    ] = None


class Filtered(ToolArgs):
    userId: Annotated[str, Field(description=USER)]
    sectors: Annotated[list[Sector] | None, Field(description=SECTORS_DOC)] = None
    primarySector: Annotated[Sector | None, Field(description="Filter by primary sector")] = None
    minStrength: Annotated[Number | None, ranged("Minimum memory strength (0-1)", 0, 1)] = None
    minSalience: Annotated[Number | None, ranged("Minimum salience score (0-1)", 0, 1)] = None
    dateRange: Annotated[DateRange | None, Field(description="Filter by creation date range")] = None
    metadata: Annotated[MetadataFilter | None, Field(description="Metadata filters")] = None
    limit: Annotated[Number | None, ranged("Maximum results to return (default 10, max 100)", 1, 100)] = None
    offset: Annotated[Number | None, ranged("Pagination offset (default 0)", 0)] = None


class RecallArgs(Filtered):
    text: Annotated[str | None, Field(description="Search query text for vector similarity (optional)")] = (
        None
    )
    minSimilarity: Annotated[
        Number | None, ranged("Minimum vector similarity of a text query (0-1, default 0.5)", 0, 1)
    ] = None


class SearchArgs(Filtered):
    text: Annotated[
        str | None,
        Field(description="Full-text search query with boolean operators (AND, OR, NOT) and phrase matching"),
    ] = None


class UpdateArgs(ToolArgs):
    memoryId: Annotated[str, Field(description="Memory ID to update (required)")]
    userId: Annotated[str, Field(description="User ID for ownership verification (required)")]
    content: Annotated[str | None, Field(description="New content (triggers embedding regeneration)")] = None
    strength: Annotated[Number | None, ranged("New strength value (0-1)", 0, 1)] = None
    salience: Annotated[Number | None, ranged("New salience value (0-1)", 0, 1)] = None
    metadata: Annotated[MetadataUpdate | None, Field(description="Metadata updates")] = None


class ForgetArgs(ToolArgs):
    memoryId: Annotated[str, Field(description="Memory ID to delete (required)")]
    userId: Annotated[str, Field(description="User ID for ownership verification (required)")]
    soft: Annotated[
        StrictBool | None,
        Field(description=SOFT),
    ] = None


class BatchMemory(Open):
    content: str
    primarySector: Sector
    metadata: MemoryMetadata | None = None


@dataclass(frozen=True)
class BadItem:
    """A batch item that did not validate, and why."""

    error: str


class BatchRememberArgs(ToolArgs):
    userId: Annotated[str, Field(description=USER)]
    sessionId: Annotated[str, Field(description="Session ID for context tracking (required)")]
    memories: Annotated[
        list[BatchMemory | SkipJsonSchema[BadItem]],
        Field(description="Memories to store (each content and primarySector)"),
    ]

    @field_validator("memories", mode="wrap")
    @classmethod
    def _each_alone(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(value, list):
            return handler(value)
        items: list[BatchMemory | BadItem] = []
        for item in value:
            if not isinstance(item, dict):  # said in the seed's words, not the model's name
                items.append(BadItem("each memory must be an object with content and primarySector"))
                continue
            try:
                items.append(BatchMemory.model_validate(item))
            except ValidationError as exc:
                items.append(BadItem(_first_problem(exc)))
        return items


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    if error["loc"] == ("primarySector",) and error["type"] == "literal_error":
        return INVALID_SECTOR  # the seed's error, as remember answers it
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


class BatchRecallArgs(ToolArgs):
    userId: Annotated[str, Field(description=USER)]
    memoryIds: Annotated[list[str], Field(description="Memory IDs to retrieve")]
    includeDeleted: Annotated[
        StrictBool | None, Field(description="Include soft-deleted memories (default: false)")
    ] = None


class BatchForgetArgs(ToolArgs):
    memoryIds: Annotated[list[str], Field(description="Memory IDs to delete")]
    soft: Annotated[StrictBool | None, Field(description="Soft delete (default: false)")] = None


class ThinkArgs(ToolArgs):
    problem: Annotated[str, Field(description="Problem or question to reason about (required)")]
    mode: Annotated[Mode, Field(description=MODES)]
    context: Annotated[
        ReasoningContext | None, Field(description="Additional context for reasoning (optional)")
    ] = None
    userId: Annotated[
        str | None, Field(description="User whose relevant memories inform the reasoning (optional)")
    ] = None


class AnalyzeArgs(ToolArgs):
    problem: Annotated[str, Field(description="Problem to analyze systematically (required)")]
    preferredFramework: Annotated[FrameworkId | None, Field(description=PREFERRED)] = None
    context: Annotated[ReasoningContext | None, Field(description="Additional context (optional)")] = None
    userId: Annotated[
        str | None, Field(description="User whose relevant memories inform the analysis (optional)")
    ] = None


class PonderArgs(ToolArgs):
    problem: Annotated[str, Field(description="Problem to analyze with parallel reasoning (required)")]
    timeout: Annotated[
        Number | None, ranged("Total timeout in milliseconds (default: 30000ms, max: 60000ms)", 1000, 60000)
    ] = None
    context: Annotated[ReasoningContext | None, Field(description="Additional context (optional)")] = None
    userId: Annotated[
        str | None, Field(description="User whose relevant memories inform the reasoning (optional)")
    ] = None


class BreakdownArgs(ToolArgs):
    problem: Annotated[str, Field(description="Problem to decompose (required)")]
    maxDepth: Annotated[Number | None, ranged("Maximum decomposition depth (default: 3, max: 5)", 1, 5)] = (
        None
    )
    context: Annotated[ReasoningContext | None, Field(description="Additional context (optional)")] = None
    userId: Annotated[
        str | None, Field(description="User whose relevant memories inform the breakdown (optional)")
    ] = None


class AssessArgs(ToolArgs):
    reasoning: Annotated[str, Field(description="Reasoning to assess (required)")]
    evidence: Annotated[list[str] | None, Field(description="Supporting evidence (optional)")] = None
    context: Annotated[str | None, Field(description="Context for assessment (optional)")] = None


class BiasArgs(ToolArgs):
    reasoning: Annotated[str, Field(description="Reasoning to analyze for biases (required)")]
    context: Annotated[str | None, Field(description="Context for bias detection (optional)")] = None
    monitorContinuously: Annotated[
        StrictBool | None, Field(description="Enable continuous monitoring (default: false)")
    ] = None


class EmotionArgs(ToolArgs):
    text: Annotated[str, Field(description="Text to analyze for emotions (required)")]
    includeDiscrete: Annotated[
        StrictBool | None, Field(description="Include discrete emotion classification (default: true)")
    ] = None
    context: Annotated[str | None, Field(description="Context for emotion detection (optional)")] = None


class EvaluateArgs(ToolArgs):
    reasoning: Annotated[str, Field(description="Reasoning to analyze (required)")]
    context: Annotated[str | None, Field(description="Context for analysis (optional)")] = None
    includeConfidence: Annotated[
        StrictBool | None, Field(description="Include confidence assessment (default: true)")
    ] = None
    includeBias: Annotated[StrictBool | None, Field(description="Include bias detection (default: true)")] = (
        None
    )
    includeEmotion: Annotated[
        StrictBool | None, Field(description="Include emotion analysis (default: false)")
    ] = None
