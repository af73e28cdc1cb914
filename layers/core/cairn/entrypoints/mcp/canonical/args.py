"""The canonical tools' argument models: the rules tools/list advertises verbatim, and that every
call is validated against once."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, AnyUrl, Field, TypeAdapter, ValidationError, WithJsonSchema

from cairn.entrypoints.mcp.canonical.descriptions import BRAIN, SCOPES
from cairn.entrypoints.mcp.kit import ToolArgs
from cairn.entrypoints.wire_memory import ExtractMessages
from cairn.services.search.service import SortMode

BrainRef = Annotated[str | None, Field(description=BRAIN)]

_url_adapter: TypeAdapter[AnyUrl] = TypeAdapter(AnyUrl)


def _valid_url(value: str) -> str:
    try:
        _url_adapter.validate_python(value)
    except ValidationError:
        raise ValueError("must be a valid URL") from None
    return value  # the caller's spelling, not pydantic's normalised form


Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=4096,
        description="What to look for, in plain words (1-4096 characters): matched by meaning and by its "
        "words (stemmed, stop words dropped, OR-ed).",
    ),
]
Url = Annotated[str, AfterValidator(_valid_url), WithJsonSchema({"type": "string", "format": "uri"})]
Tag = Annotated[str, Field(min_length=1, max_length=64)]


class NoArgs(ToolArgs):
    pass


class AskArgs(ToolArgs):
    query: Annotated[
        str, Field(min_length=1, max_length=8192, description="The question to answer (1-8192 characters).")
    ]
    brain: BrainRef = None
    top_k: Annotated[
        int | None,
        Field(
            ge=1,
            le=50,
            description="How many passages (chunks) to retrieve and answer from: 1-50, default 8.",
        ),
    ] = None


class SearchArgs(ToolArgs):
    query: Query
    brain: BrainRef = None
    top_k: Annotated[
        int, Field(ge=1, le=100, description="How many hits (one per document) to return: 1-100, default 10.")
    ] = 10
    scope: Annotated[
        Literal["all", "global", "project", "agent"] | None,
        Field(description=f"Memory namespace by path: {SCOPES}; all (the default) = the whole brain."),
    ] = None
    sort: Annotated[
        SortMode | None,
        Field(
            description="relevance (the default): the blend of meaning and keyword scores; recency: newest "
            "created first among the best matches; relevance_then_recency: the blend to 3 significant "
            "digits, newer first on ties."
        ),
    ] = None


class RecallArgs(ToolArgs):
    query: Query
    brain: BrainRef = None
    scope: Annotated[
        Literal["global", "project", "agent"] | None,
        Field(description=f"Memory namespace by path: {SCOPES}; omitted = the whole brain."),
    ] = None
    session_id: Annotated[
        str | None,
        Field(
            description="A session of this brain whose newest messages weight the recall (answers {chunks}); "
            "omitted: a plain memory_search."
        ),
    ] = None
    top_k: Annotated[
        int | None, Field(ge=1, le=50, description="How many hits to return: 1-50, default 10.")
    ] = None


class RememberArgs(ToolArgs):
    content: Annotated[
        str,
        Field(
            min_length=1,
            max_length=5_000_000,
            description="The note's markdown (1-5,000,000 characters), as stored.",
        ),
    ]
    title: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=512,
            description="1-512 characters; default: the front-matter title, else the first heading, else the "
            "note's file name.",
        ),
    ] = None
    brain: BrainRef = None
    tags: Annotated[
        list[Tag] | None,
        Field(
            max_length=64,
            description="Up to 64 tags of 1-64 characters, forwarded comma-joined as metadata.tags "
            "(a tag holding commas is the tags it joins).",
        ),
    ] = None
    path: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=1024,
            description="Relative document path (a leading / is dropped); default "
            "memory/global/<slug>-<id>.md. A note already there is replaced.",
        ),
    ] = None


class IngestFileArgs(ToolArgs):
    path: Annotated[
        str,
        Field(
            description="The file, absolute or relative: over HTTP below the server's ingest root (relative "
            "paths resolve against it); over stdio any file the server's user can read; on AWS the key "
            "of a presigned upload (uploads/…)."
        ),
    ]
    brain: BrainRef = None
    as_: Annotated[
        Literal["markdown", "text", "pdf", "json", "html"] | None,
        Field(
            alias="as",
            description="How to read the file; default: from the extension, else from the content.",
        ),
    ] = None


class IngestUrlArgs(ToolArgs):
    url: Annotated[
        Url,
        Field(description="The http(s) URL to fetch (public addresses only; at most 5 MiB by default)."),
    ]
    brain: BrainRef = None


class CreateBrainArgs(ToolArgs):
    name: Annotated[str, Field(min_length=1, max_length=128, description="Display name, 1-128 characters.")]
    slug: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=64,
            pattern=r"^[a-z0-9][a-z0-9-]*$",
            description="1-64 of a-z, 0-9 and -, not starting with -; default: made from the name, suffixed "
            "-2, -3, … when taken.",
        ),
    ] = None
    visibility: Annotated[
        Literal["private", "tenant", "public"],
        Field(
            description="private (the default): its owner only; tenant: the caller's whole tenant; public: "
            "other tenants may read it too."
        ),
    ] = "private"


class ExtractArgs(ToolArgs):
    messages: Annotated[
        ExtractMessages,
        Field(
            description="The conversation, oldest first: 1-500 messages of {role: system, user, assistant or "
            "tool; content: 1-1,000,000 characters}."
        ),
    ]
    brain: BrainRef = None
    actor_id: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=256,
            description="Whose memories these are: facts go to memory/agent/<actor>/; omitted, "
            "memory/global/.",
        ),
    ] = None
    session_id: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=128,
            description="An open session of this brain (1-128 characters) to append the messages to; "
            "omitted: a transcript document is stored.",
        ),
    ] = None


class ReflectArgs(ToolArgs):
    session_id: Annotated[
        str,
        Field(
            min_length=1,
            max_length=128,
            description="The session of this brain to close and reflect on (1-128 characters).",
        ),
    ]
    brain: BrainRef = None


class ConsolidateArgs(ToolArgs):
    brain: BrainRef = None
