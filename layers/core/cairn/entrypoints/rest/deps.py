"""Dependencies shared by the /v1 routers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated
from urllib.parse import unquote_to_bytes

from fastapi import Path, Request

from cairn.container import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain
from cairn.entrypoints.counted_calls import off_thread
from cairn.entrypoints.rest.body import JSON, require_media_type

BrainIdParam = Annotated[str, Path(alias="brainId", description="Brain id (brn_...) or slug")]


def brain_resolver(container: Container) -> Callable[[str, Request], Awaitable[Brain]]:
    """`{brainId}` accepts an id or a slug everywhere; unknown brains are 404 not_found. The brain
    is kept on the request for the audit record (rest/authz.py)."""

    def brain(brain_id: BrainIdParam, request: Request) -> Brain:
        resolved = container.brains.get(brain_id)
        request.state.brain = resolved
        return resolved

    return off_thread(brain, settles=False)  # counted (entrypoints/counted_calls.py)


def require_json(request: Request) -> None:
    """Runs before the body is validated, so a wrong Content-Type is 415, not 400."""
    require_media_type(request, JSON)


def utf8_query(request: Request) -> None:
    """Refuses a query string whose percent-decoded bytes are not UTF-8. Starlette decodes them
    leniently, each bad byte to U+FFFD, so `caf%E9.md` and `caf%E8.md` (Latin-1 é and è) would name
    one document, the one a delete of either removes."""
    for part in request.scope.get("query_string", b"").split(b"&"):
        try:
            unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(
                "the query string is not UTF-8 once percent-decoded: percent-encode each parameter's "
                "UTF-8 bytes"
            ) from None
