"""What a tools/call request carries in `_meta` besides its arguments. MCP lets a client send keys
of its own implementation there; Cairn reads them where a seed fixes a tool's parameters but a
client must still be able to tune how it behaves:

- `cairn/read_only: true` on zengram's `brain_search`: look without counting the results as read,
  as `GET /memory/search?read_only=true` does (the seed's tool has no such parameter).

SurfaceServer sets the request's `_meta` around each call (a context variable, so the sync handler
in its worker thread sees it); a handler asks `flag`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

READ_ONLY: Final = "cairn/read_only"

_meta: ContextVar[Mapping[str, Any] | None] = ContextVar("cairn_mcp_request_meta", default=None)


def flag(key: str) -> bool:
    """The request's `_meta` sets `key` to true (JSON true, nothing else)."""
    meta = _meta.get()
    return meta is not None and meta.get(key) is True


@contextmanager
def carrying(meta: Mapping[str, Any] | None) -> Iterator[None]:
    token = _meta.set(dict(meta or {}))
    try:
        yield
    finally:
        _meta.reset(token)
