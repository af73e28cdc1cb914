"""The arguments of Mnemosyne's six tools, as seed 003 lists them (names, types, defaults).

Every tool but get_health also takes `workspace_id`, as the real server's schema shows it: without a
description (the calling model is not meant to fill it; a host injects it), `""` meaning none."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from cairn.entrypoints.mcp.kit import ToolArgs
from cairn.entrypoints.mcp.mnemosyne.descriptions import TYPES

Offset = Annotated[int, Field(ge=0, description="How many entries to skip (default 0).")]


class Workspace(ToolArgs):
    workspace_id: str | None = None

    @field_validator("workspace_id")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None


class SearchArgs(Workspace):
    query: Annotated[str, Field(description="What to look for, in natural language or keywords.")]
    library_uid: Annotated[str | None, Field(description="Search only the library with this uid.")] = None
    library_type: Annotated[
        str | None, Field(description=f"Search only libraries of this type ({TYPES}).")
    ] = None
    collection_uid: Annotated[str | None, Field(description="Search only the collection with this uid.")] = (
        None
    )
    limit: Annotated[
        int, Field(description="How many candidates (and images) at most: default 20, clamped into 1..200.")
    ] = 20
    rerank: Annotated[
        bool,
        Field(description="Re-order the fused candidates with the configured re-ranker; false skips it."),
    ] = True
    include_images: Annotated[bool, Field(description="Also return matching image items in `images`.")] = True
    search_types: Annotated[
        list[str] | None,
        Field(
            description='Retrieval legs to run, any of "vector", "fulltext", "graph" (default: all three).',
            json_schema_extra={"default": ["vector", "fulltext", "graph"]},  # the seed's; None runs all
        ),
    ] = None


class GetChunkArgs(Workspace):
    chunk_uid: Annotated[str, Field(description="A `chunk_uid` taken from a search candidate.")]


class ListLibrariesArgs(Workspace):
    limit: Annotated[
        int, Field(description="How many libraries at most: default 50, clamped into 1..200.")
    ] = 50
    offset: Offset = 0


class ListCollectionsArgs(Workspace):
    library_uid: Annotated[str | None, Field(description="Only the collections of this library.")] = None
    limit: Annotated[
        int, Field(description="How many collections at most: default 50, clamped into 1..200.")
    ] = 50
    offset: Offset = 0


class ListItemsArgs(Workspace):
    collection_uid: Annotated[str | None, Field(description="Only the items of this collection.")] = None
    library_uid: Annotated[str | None, Field(description="Only the items of this library.")] = None
    limit: Annotated[int, Field(description="How many items at most: default 50, clamped into 1..200.")] = 50
    offset: Offset = 0


class NoArgs(ToolArgs):
    pass
