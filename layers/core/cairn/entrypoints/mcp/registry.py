"""The registry of MCP tool surfaces: the one list of them. Each surface is served over HTTP at its
path (mounted by entrypoints/http.py and mcp/http.py) and over stdio (`cairn mcp --surface <name>`,
whose choices and default come from here).

Builders are named, not imported: the CLI reads the surface names for every command, and importing
the surfaces (the MCP SDK with them) would cost every `cairn` command half a second."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

from cairn.domain.errors import InvalidInput

if TYPE_CHECKING:
    from cairn.entrypoints.mcp.kit import SurfaceDeps, SurfaceServer

SurfaceBuilder = Callable[["SurfaceDeps"], "SurfaceServer"]


@dataclass(frozen=True)
class Surface:
    builder: str
    """`module:function` of its builder, imported when the surface is first built."""
    http_path: str


SURFACES: dict[str, Surface] = {
    "canonical": Surface("cairn.entrypoints.mcp.canonical:build_canonical", "/mcp"),
    "admin": Surface("cairn.entrypoints.mcp.admin:build_admin", "/mcp/admin"),
    "zengram": Surface("cairn.entrypoints.mcp.zengram:build_zengram", "/mcp/zengram"),
    "gbrain": Surface("cairn.entrypoints.mcp.gbrain:build_gbrain", "/mcp/gbrain"),
}
DEFAULT_SURFACE = "canonical"
"""What `cairn mcp` serves without --surface, and whose path the bare resource metadata names."""


def _surface(name: str) -> Surface:
    try:
        return SURFACES[name]
    except KeyError:
        known = ", ".join(SURFACES)
        raise InvalidInput(f"unknown MCP surface {name!r} (available: {known})") from None


def http_path(surface: str) -> str:
    return _surface(surface).http_path


def require_surface(surface: str) -> SurfaceBuilder:
    module, _, function = _surface(surface).builder.partition(":")
    builder: SurfaceBuilder = getattr(import_module(module), function)
    return builder


def build_server(surface: str, deps: SurfaceDeps) -> SurfaceServer:
    return require_surface(surface)(deps)
