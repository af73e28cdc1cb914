"""The canonical tools' argument models: the rules tools/list advertises verbatim, and that every
call is validated against once."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, AnyUrl, Field, TypeAdapter, ValidationError, WithJsonSchema

from cairn.entrypoints.mcp.kit import ToolArgs
from cairn.entrypoints.wire_memory import ExtractMessages
from cairn.services.search.service import SortMode

BrainRef = Annotated[
    str | None, Field(description="Brain id or slug (default: JBMCP_DEFAULT_BRAIN, else the first brain).")
]

_url_adapter: TypeAdapter[AnyUrl] = TypeAdapter(AnyUrl)


def _valid_url(value: str) -> str:
    try:
        _url_adapter.validate_python(value)
    except ValidationError:
        raise ValueError("must be a valid URL") from None
    return value  # the caller's spelling, not pydantic's normalised form


Query = Annotated[str, Field(min_length=1, max_length=4096, description="What to look for.")]
Url = Annotated[str, AfterValidator(_valid_url), WithJsonSchema({"type": "string", "format": "uri"})]
Tag = Annotated[str, Field(min_length=1, max_length=64)]


class NoArgs(ToolArgs):
    pass


class AskArgs(ToolArgs):
    query: Annotated[str, Field(min_length=1, max_length=8192, description="The question.")]
    brain: BrainRef = None
    top_k: Annotated[int | None, Field(ge=1, le=50, description="Chunks to retrieve (default 8).")] = None


class SearchArgs(ToolArgs):
    query: Query
    brain: BrainRef = None
    top_k: Annotated[int, Field(ge=1, le=100, description="How many hits to return.")] = 10
    scope: Annotated[
        Literal["all", "global", "project", "agent"] | None,
        Field(description="Memory namespace: memory/global/, memory/project/…, memory/agent/…, or all."),
    ] = None
    sort: Annotated[
        SortMode | None,
        Field(
            description="Ranking: fused relevance (default), newest first, or relevance with recency ties."
        ),
    ] = None


class RecallArgs(ToolArgs):
    query: Query
    brain: BrainRef = None
    scope: Annotated[Literal["global", "project", "agent"] | None, Field(description="Memory namespace.")] = (
        None
    )
    session_id: Annotated[
        str | None, Field(description="Session whose recent context weights the recall.")
    ] = None
    top_k: Annotated[int | None, Field(ge=1, le=50, description="How many hits to return (default 10).")] = (
        None
    )


class RememberArgs(ToolArgs):
    content: Annotated[str, Field(min_length=1, max_length=5_000_000, description="Markdown body.")]
    title: Annotated[
        str | None, Field(min_length=1, max_length=512, description="Title (default: the first heading).")
    ] = None
    brain: BrainRef = None
    tags: Annotated[list[Tag] | None, Field(max_length=64, description="Tags, stored as metadata.tags.")] = (
        None
    )
    path: Annotated[
        str | None,
        Field(min_length=1, max_length=1024, description="Document path (default memory/global/<slug>.md)."),
    ] = None


class IngestFileArgs(ToolArgs):
    path: Annotated[str, Field(description="Absolute or relative local path.")]
    brain: BrainRef = None
    as_: Annotated[
        Literal["markdown", "text", "pdf", "json", "html"] | None,
        Field(alias="as", description="Content type (default: inferred from the extension)."),
    ] = None


class IngestUrlArgs(ToolArgs):
    url: Annotated[Url, Field(description="The http(s) URL to fetch.")]
    brain: BrainRef = None


class CreateBrainArgs(ToolArgs):
    name: Annotated[str, Field(min_length=1, max_length=128, description="Display name.")]
    slug: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=64,
            pattern=r"^[a-z0-9][a-z0-9-]*$",
            description="Default: from the name.",
        ),
    ] = None
    visibility: Literal["private", "tenant", "public"] = "private"


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
