"""The registry of MCP tool surfaces. Each surface is served at its own path (`/mcp` for canonical,
`/mcp/<name>` for the others) and over stdio (`cairn mcp --surface <name>`).

Builders are named, not imported: the CLI reads the surface names for every command, and importing
the surfaces (the MCP SDK with them) would cost every `cairn` command half a second."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

from cairn.domain.errors import InvalidInput

if TYPE_CHECKING:
    from cairn.entrypoints.mcp.tools import SurfaceDeps, SurfaceServer

SurfaceBuilder = Callable[["SurfaceDeps"], "SurfaceServer"]

SURFACES: dict[str, str] = {
    "canonical": "cairn.entrypoints.mcp.canonical:build_canonical",
    "admin": "cairn.entrypoints.mcp.admin:build_admin",
}
"""Surface name -> `module:function` of its builder."""


def http_path(surface: str) -> str:
    return "/mcp" if surface == "canonical" else f"/mcp/{surface}"


def require_surface(surface: str) -> SurfaceBuilder:
    try:
        module, _, function = SURFACES[surface].partition(":")
    except KeyError:
        known = ", ".join(SURFACES)
        raise InvalidInput(f"unknown MCP surface {surface!r} (available: {known})") from None
    builder: SurfaceBuilder = getattr(import_module(module), function)
    return builder


def build_server(surface: str, deps: SurfaceDeps) -> SurfaceServer:
    return require_surface(surface)(deps)
