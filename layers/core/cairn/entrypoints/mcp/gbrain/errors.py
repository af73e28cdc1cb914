"""gbrain's error style: every failure is a JSON-RPC error, never an isError result.

| code   | failures                                                                           |
|--------|------------------------------------------------------------------------------------|
| -32602 | invalid params: the arguments' schema, slugs, content size, relationships, tags,    |
|        | temporal values and filters, gap query/context, raw source/data; an unknown tool    |
| -32001 | not found: a page, link or collection (and no collection at all)                    |
| -32002 | an ambiguous slug (data `{"code": "ambiguous_slug", "candidates": [...]}`) and a    |
|        | restoring / needs-full-sync collection                                              |
| -32009 | conflicts: a put that missed its version (data `{"current_version": N or null}`)    |
| -32003 | everything else: a read-only collection, a raw-data source already stored, a caller |
|        | refused by Cairn's authorization (data `{"code": "forbidden"}` or `unauthorized`),  |
|        | an internal error                                                                   |
"""

from __future__ import annotations

from typing import Any, NoReturn

from mcp.shared.exceptions import MCPError

from cairn.domain.errors import CairnError, VersionConflict
from cairn.domain.pages import AmbiguousSlug
from cairn.services.gbrain.raw_data import RawDataExists

INVALID_PARAMS = -32602
NOT_FOUND = -32001
AMBIGUOUS = -32002
DATABASE = -32003
CONFLICT = -32009

CODES = {
    "unknown_tool": INVALID_PARAMS,
    "validation_error": INVALID_PARAMS,
    "unsupported_content": INVALID_PARAMS,
    "payload_too_large": INVALID_PARAMS,
    "not_found": NOT_FOUND,
    "no_brain": NOT_FOUND,
    "ambiguous_slug": AMBIGUOUS,
    "ambiguous_link": AMBIGUOUS,
    "collection_restoring": AMBIGUOUS,
    "conflict": CONFLICT,
}
REFUSALS = ("forbidden", "unauthorized")
"""Cairn's authorization refusals: -32003 with the refusal in data.code, so a client can tell them
from gbrain's own -32003 failures."""


class AmbiguousLink(CairnError):
    """A link id that several of the caller's collections hold (link ids count per collection)."""

    code = "ambiguous_link"

    def __init__(self, link_id: int, collections: list[str]) -> None:
        super().__init__(f"AmbiguityError: link id {link_id} exists in multiple collections")
        self.candidates = sorted(collections)


class GbrainErrors:
    """The ErrorPolicy of the gbrain surface (the module docstring's table)."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> NoReturn:
        data: dict[str, Any] | None = None
        number = CODES.get(code, DATABASE)
        if isinstance(cause, AmbiguousSlug):
            data = {"code": "ambiguous_slug", "candidates": list(cause.candidates)}
        elif isinstance(cause, AmbiguousLink):
            data = {"code": "ambiguous_link", "candidates": list(cause.candidates)}
        elif isinstance(cause, RawDataExists):
            number = DATABASE
        elif isinstance(cause, VersionConflict):
            data = {"current_version": cause.current_version}
        elif code in REFUSALS:
            data = {"code": code}
        elif number == CONFLICT and not message.startswith("conflict"):
            message = f"conflict: {message}"
        raise MCPError(number, message, data=data)
