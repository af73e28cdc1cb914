"""The app's FastAPI routes with their full paths, through included routers: what the matrices and
fuzzers walk, so a route added later is covered as it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi.routing import APIRoute


def api_routes(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, APIRoute]]:
    """Every APIRoute of the app with its full path, through included routers."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield prefix + route.path, route
        elif hasattr(route, "original_router"):  # FastAPI's included router
            yield from api_routes(route.original_router.routes, prefix + route.include_context.prefix)
