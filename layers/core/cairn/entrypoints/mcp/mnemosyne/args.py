"""The arguments of Mnemosyne's six tools, as seed 003 lists them (names, types, defaults).

Every tool but get_health also takes `workspace_id`, as the real server's schema shows it: without a
description (the calling model is not meant to fill it; a host injects it), `""` meaning none."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from cairn.entrypoints.mcp.kit import ToolArgs

Offset = Annotated[int, Field(ge=0, description="Pagination offset.")]


class Workspace(ToolArgs):
    workspace_id: str | None = None

    @field_validator("workspace_id")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None


class SearchArgs(Workspace):
    query: Annotated[str, Field(description="The search query.")]
    library_uid: Annotated[str | None, Field(description="Restrict to one library by UID.")] = None
    library_type: Annotated[
        str | None, Field(description="Restrict by library type (fiction, nonfiction, technical, ...).")
    ] = None
    collection_uid: Annotated[str | None, Field(description="Restrict to one collection by UID.")] = None
    limit: Annotated[int, Field(description="Maximum candidates to return.")] = 20
    rerank: Annotated[bool, Field(description="Apply re-ranking. Set False to skip.")] = True
    include_images: Annotated[bool, Field(description="Include matching images in the response.")] = True
    search_types: Annotated[
        list[str] | None,
        Field(description='Which retrieval strategies to run (default ["vector", "fulltext", "graph"]).'),
    ] = None


class GetChunkArgs(Workspace):
    chunk_uid: Annotated[str, Field(description="The chunk UID from a `search` result.")]


class ListLibrariesArgs(Workspace):
    limit: Annotated[int, Field(description="Max libraries to return (capped at 200).")] = 50
    offset: Offset = 0


class ListCollectionsArgs(Workspace):
    library_uid: Annotated[str | None, Field(description="Filter to one parent library.")] = None
    limit: Annotated[int, Field(description="Max collections to return (capped at 200).")] = 50
    offset: Offset = 0


class ListItemsArgs(Workspace):
    collection_uid: Annotated[str | None, Field(description="Filter to one collection.")] = None
    library_uid: Annotated[str | None, Field(description="Filter to one library.")] = None
    limit: Annotated[int, Field(description="Max items to return (capped at 200).")] = 50
    offset: Offset = 0


class NoArgs(ToolArgs):
    pass
