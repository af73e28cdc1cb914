"""The arguments of the 17 `brain_*` tools, as seed 002 lists them: names, required fields and
types (u32/u64 as integers of at least 0, i64 as an integer, string[] as an array of strings).

A value of the wrong JSON type is an invalid-params error from the kit's validation. Values of the
right type are judged by the tools with gbrain's messages (slugs, temporal values, relationships,
tags, raw data), so `data` is taken as any JSON value but advertised as an object: a non-object
gets gbrain's own message."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from cairn.entrypoints.mcp.kit import ToolArgs

Unsigned = Annotated[int, Field(ge=0)]
SLUG = "Page slug, bare (`people/alice`) or collection-qualified (`work::people/alice`)"
ISO = "YYYY-MM, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"
TEMPORAL = '"current"/"active" (default) or "all"/"history"'


class SlugArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]


class PutArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]
    content: Annotated[str, Field(description="Full page markdown (frontmatter + body)")]
    expected_version: Annotated[
        int | None,
        Field(description="OCC: the page's current version; omit only to create a new page"),
    ] = None


class SearchArgs(ToolArgs):
    query: Annotated[str, Field(description="Search text")]
    collection: Annotated[str | None, Field(description="Collection to search (default: the active one)")] = (
        None
    )
    wing: Annotated[str | None, Field(description="Only pages of this wing (first slug segment)")] = None
    limit: Annotated[Unsigned, Field(description="Maximum results (default 10)")] = 10


class QueryArgs(SearchArgs):
    depth: Annotated[
        str | None, Field(description='"auto" to expand along outbound links within the token budget')
    ] = None


class ListArgs(ToolArgs):
    collection: Annotated[str | None, Field(description="Collection to list (default: the active one)")] = (
        None
    )
    wing: Annotated[str | None, Field(description="Only pages of this wing")] = None
    page_type: Annotated[str | None, Field(description="Only pages of this type (frontmatter `type`)")] = None
    limit: Annotated[Unsigned, Field(description="Maximum pages (default 50)")] = 50


class LinkArgs(ToolArgs):
    from_slug: Annotated[str, Field(description="Page the link starts from")]
    to_slug: Annotated[str, Field(description="Page the link points to")]
    relationship: Annotated[str, Field(description="Link type, [a-z0-9_-], at most 64 characters")]
    valid_from: Annotated[str | None, Field(description=f"Start of validity ({ISO})")] = None
    valid_until: Annotated[
        str | None,
        Field(description=f"End of validity ({ISO}); closes the open link of the same kind if there is one"),
    ] = None


class LinkCloseArgs(ToolArgs):
    link_id: Annotated[Unsigned, Field(description="The link's id (from brain_backlinks)")]
    valid_until: Annotated[str, Field(description=f"End of validity ({ISO})")]


class BacklinksArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]
    limit: Annotated[Unsigned | None, Field(description="Maximum links (default 100)")] = None
    temporal: Annotated[str | None, Field(description=TEMPORAL)] = None


class GraphArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]
    depth: Annotated[Unsigned, Field(description="Hops to follow (default 2, at most 10)")] = 2
    temporal: Annotated[str | None, Field(description=TEMPORAL)] = None


class CheckArgs(ToolArgs):
    slug: Annotated[str | None, Field(description="Page to check (omit to scan every page)")] = None


class TimelineArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]
    limit: Annotated[Unsigned, Field(description="Maximum entries (default 20)")] = 20


class TagsArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]
    add: Annotated[list[str] | None, Field(description="Tags to add")] = None
    remove: Annotated[list[str] | None, Field(description="Tags to remove")] = None


class GapArgs(ToolArgs):
    query: Annotated[str, Field(description="The unanswered question (only its SHA-256 is kept)")]
    slug: Annotated[str | None, Field(description="Page the gap is about")] = None
    context: Annotated[str | None, Field(description="Why it is a gap (checked, never stored)")] = None


class GapsArgs(ToolArgs):
    resolved: Annotated[bool, Field(description="true lists every gap, resolved or not")] = False
    limit: Annotated[Unsigned, Field(description="Maximum gaps (default 20, at most 1000)")] = 20


class NoArgs(ToolArgs):
    pass


class RawArgs(ToolArgs):
    slug: Annotated[str, Field(description=SLUG)]
    source: Annotated[str, Field(description='Where the data came from, e.g. "crustdata", "exa", "meeting"')]
    data: Annotated[Any, Field(description="A JSON object", json_schema_extra={"type": "object"})]
    overwrite: Annotated[bool, Field(description="Replace the row this source already has")] = False
