"""The registry of MCP tool surfaces. Each surface is served at its own path (`/mcp` for canonical,
`/mcp/<name>` for the others) and over stdio (`cairn mcp --surface <name>`)."""

from __future__ import annotations

from collections.abc import Callable

from cairn.domain.errors import InvalidInput
from cairn.entrypoints.mcp.admin import build_admin
from cairn.entrypoints.mcp.canonical import build_canonical
from cairn.entrypoints.mcp.tools import SurfaceDeps, SurfaceServer

SurfaceBuilder = Callable[[SurfaceDeps], SurfaceServer]

SURFACES: dict[str, SurfaceBuilder] = {"canonical": build_canonical, "admin": build_admin}


def http_path(surface: str) -> str:
    return "/mcp" if surface == "canonical" else f"/mcp/{surface}"


def require_surface(surface: str) -> SurfaceBuilder:
    try:
        return SURFACES[surface]
    except KeyError:
        known = ", ".join(SURFACES)
        raise InvalidInput(f"unknown MCP surface {surface!r} (available: {known})") from None


def build_server(surface: str, deps: SurfaceDeps) -> SurfaceServer:
    return require_surface(surface)(deps)
