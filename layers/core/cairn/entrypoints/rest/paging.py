"""Paged REST listings: `limit` and `cursor` in; `next_cursor` and a `Link: <…>; rel="next"` out.

A listing answers everything it holds in one response when that fits its page size; otherwise the
response carries both announcements, and the next request is the same one with `cursor` set.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request, Response
from pydantic import Field

from cairn.services.documents.listing import MAX_CURSOR_CHARS

CursorParam = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_CURSOR_CHARS,
        pattern=r"^[A-Za-z0-9_-]+$",  # base64url, as every listing makes them
        description="Opaque: the `next_cursor` of the previous page (or its Link rel=next)",
    ),
]


NEXT_LINK: dict[int | str, dict[str, Any]] = {
    200: {
        "headers": {
            "Link": {
                "description": 'Present only when more items follow: `<next page URL>; rel="next"`',
                "schema": {"type": "string"},
            }
        }
    }
}
"""A paged listing route's `responses=`: its 200 may carry the Link header."""


def next_cursor_field() -> Any:
    """`next_cursor` of a paged wire shape: present only when more items follow."""
    return Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Present only when more items follow: pass it back as `cursor`",
    )


def announce_next(request: Request, response: Response, cursor: str | None) -> None:
    """Set `Link: <this request with cursor=…>; rel="next"` when another page follows."""
    if cursor is not None:
        response.headers["Link"] = f'<{request.url.include_query_params(cursor=cursor)}>; rel="next"'
