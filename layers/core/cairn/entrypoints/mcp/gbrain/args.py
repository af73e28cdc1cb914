"""The arguments of the 17 `brain_*` tools, as seed 002 lists them: names, required fields and
types (u32/u64 as integers from 0 to their maximum, i64 as an integer, string[] as an array of
strings).

gbrain's server deserialises arguments into typed structs, so a value of another JSON type is
invalid params (-32602), never converted: the models are strict (`"3"` is not a number and `"yes"`
not a boolean). Values of the right type are judged by the tools with gbrain's messages (slugs,
temporal values, relationships, tags, raw data), so `data` is taken as any JSON value but
advertised as an object: a non-object gets gbrain's own message."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from cairn.entrypoints.mcp.kit import ToolArgs

U32 = Annotated[int, Field(ge=0, le=2**32 - 1)]
U64 = Annotated[int, Field(ge=0, le=2**64 - 1)]
SLUG = "Page slug: bare (`people/alice`) or collection-qualified (`work::people/alice`)"
ISO = "YYYY-MM, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"
TEMPORAL = '"current" (default; also "active") or "all" (also "history") to include closed links'
COLLECTION = "Collection to read (default: the only active one, else `default`)"
WING = "Only pages whose first slug segment is this (`general` for slugs without `/`)"


class GbrainArgs(ToolArgs):
    """Strict: no value is converted from another JSON type. `null` for an optional argument is
    the argument omitted (gbrain's `Option<T>` fields read it as None: the default applies)."""

    model_config = ConfigDict(strict=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_omitted(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        optional = {name for name, field in cls.model_fields.items() if not field.is_required()}
        return {k: v for k, v in data.items() if not (v is None and k in optional)}


class SlugArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]


class PutArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]
    content: Annotated[str, Field(description="The whole page markdown (frontmatter + body), at most 1 MiB")]
    expected_version: Annotated[
        int | None,
        Field(
            description="OCC: the page's current version, required to update; omit only to create a new page"
        ),
    ] = None


class SearchArgs(GbrainArgs):
    query: Annotated[str, Field(description="Search text")]
    collection: Annotated[str | None, Field(description=COLLECTION)] = None
    wing: Annotated[str | None, Field(description=WING)] = None
    limit: Annotated[U32, Field(description="Maximum results (default 10, at most 1000)")] = 10


class QueryArgs(SearchArgs):
    depth: Annotated[
        str | None,
        Field(description='"auto" for progressive expansion along outbound links within the token budget'),
    ] = None


class ListArgs(GbrainArgs):
    collection: Annotated[str | None, Field(description=COLLECTION)] = None
    wing: Annotated[str | None, Field(description=WING)] = None
    page_type: Annotated[
        str | None, Field(description="Only pages of this frontmatter `type` (`concept` when absent)")
    ] = None
    limit: Annotated[U32, Field(description="Maximum pages (default 50, at most 1000)")] = 50


class LinkArgs(GbrainArgs):
    from_slug: Annotated[str, Field(description="Page the link starts from (bare or qualified slug)")]
    to_slug: Annotated[str, Field(description="Page the link points to, in the same collection")]
    relationship: Annotated[str, Field(description="Link type: 1-64 characters of [a-z0-9_-], e.g. works_at")]
    valid_from: Annotated[str | None, Field(description=f"Start of validity ({ISO}); omit: open start")] = (
        None
    )
    valid_until: Annotated[
        str | None,
        Field(description=f"End of validity ({ISO}); closes the open link of the same kind if there is one"),
    ] = None


class LinkCloseArgs(GbrainArgs):
    link_id: Annotated[U64, Field(description="The link's id, as brain_backlinks lists it")]
    valid_until: Annotated[str, Field(description=f"End of validity ({ISO})")]


class BacklinksArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]
    limit: Annotated[U32 | None, Field(description="Maximum links (default 100, at most 1000)")] = None
    temporal: Annotated[str | None, Field(description=TEMPORAL)] = None


class GraphArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]
    depth: Annotated[U32, Field(description="Hops to follow (default 2, at most 10)")] = 2
    temporal: Annotated[str | None, Field(description=TEMPORAL)] = None


class CheckArgs(GbrainArgs):
    slug: Annotated[str | None, Field(description="Page to check (omit to scan every page)")] = None


class TimelineArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]
    limit: Annotated[U32, Field(description="Maximum entries (default 20, at most 1000)")] = 20


class TagsArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]
    add: Annotated[
        list[str] | None, Field(description="Tags to add: each 1-64 characters of [a-z0-9_-], at most 100")
    ] = None
    remove: Annotated[list[str] | None, Field(description="Tags to remove (after adding), at most 100")] = (
        None
    )


class GapArgs(GbrainArgs):
    query: Annotated[str, Field(description="The unanswered question (only its SHA-256 hash is kept)")]
    slug: Annotated[str | None, Field(description="Page the gap is about")] = None
    context: Annotated[
        str | None, Field(description="Why it is a gap, at most 500 characters (checked, never stored)")
    ] = None


class GapsArgs(GbrainArgs):
    resolved: Annotated[
        bool, Field(description="false (default): open gaps only; true: every gap, resolved or not")
    ] = False
    limit: Annotated[U32, Field(description="Maximum gaps (default 20, at most 1000)")] = 20


class NoArgs(GbrainArgs):
    pass


class RawArgs(GbrainArgs):
    slug: Annotated[str, Field(description=SLUG)]
    source: Annotated[str, Field(description='Where the data came from, e.g. "crustdata", "exa", "meeting"')]
    data: Annotated[
        Any,
        Field(
            description="A JSON object (not an array or scalar), at most 1 MiB",
            json_schema_extra={"type": "object"},
        ),
    ]
    overwrite: Annotated[
        bool, Field(description="Replace the row this source already has for the page (default false)")
    ] = False
