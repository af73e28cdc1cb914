"""The registry of MCP tool surfaces: the one list of them. Each surface is served over HTTP at its
path (mounted by entrypoints/http.py and mcp/http.py) and over stdio (`cairn mcp --surface <name>`,
whose choices and default come from here).

Declarations (kit/surface.py: each surface package's `SURFACE`) are named, not imported: the CLI
reads the surface names for every command, and importing the surfaces (the MCP SDK with them) would
cost every `cairn` command half a second."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

from cairn.domain.errors import InvalidInput

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.entrypoints.mcp.kit import SurfaceDecl, SurfaceServer
    from cairn.services.ingest.inputs import LocalFilePolicy


@dataclass(frozen=True)
class Surface:
    declaration: str
    """`module:name` of its SurfaceDecl, imported when the surface is first built."""
    http_path: str
    trailing_slash: bool = False
    """Also served at `http_path` + "/" (where the real server lives at `/mcp/`)."""
    anonymous: bool = False
    """A call of one of its `public` tools needs no credential (Mnemosyne's get_health), nor does the
    handshake and tool list a client makes first: without one they run as the anonymous caller
    (auth/principal.py). Any other request without a credential (every other tool call) is asked to
    sign in, 401 with the resource metadata, on a server with authentication, so OAuth clients
    discover sign-in there as on every endpoint; on an open loopback server it runs as the anonymous
    caller too, whom every other tool refuses."""
    public_tools: tuple[str, ...] = ()
    """With `anonymous`: the tools declared `public`, named here so the authentication middleware
    knows them before the surface (and the MCP SDK) is imported; building the server checks them."""


SURFACES: dict[str, Surface] = {
    "canonical": Surface("cairn.entrypoints.mcp.canonical:SURFACE", "/mcp"),
    "admin": Surface("cairn.entrypoints.mcp.admin:SURFACE", "/mcp/admin"),
    "zengram": Surface("cairn.entrypoints.mcp.zengram:SURFACE", "/mcp/zengram"),
    "gbrain": Surface("cairn.entrypoints.mcp.gbrain:SURFACE", "/mcp/gbrain"),
    "mnemosyne": Surface(
        "cairn.entrypoints.mcp.mnemosyne:SURFACE",
        "/mcp/mnemosyne",
        trailing_slash=True,
        anonymous=True,
        public_tools=("get_health",),
    ),
    "thoughtmcp": Surface("cairn.entrypoints.mcp.thoughtmcp:SURFACE", "/mcp/thoughtmcp"),
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


def http_paths(surface: str) -> tuple[str, ...]:
    """Every path the surface is served at over HTTP."""
    found = _surface(surface)
    return (found.http_path, found.http_path + "/") if found.trailing_slash else (found.http_path,)


def public_tools() -> dict[str, frozenset[str]]:
    """For each path of a surface callers without a credential may reach (`anonymous`), the tools
    they may call there."""
    return {
        path: frozenset(s.public_tools)
        for name, s in SURFACES.items()
        if s.anonymous
        for path in http_paths(name)
    }


def anonymous_paths() -> tuple[str, ...]:
    """HTTP paths where a request without a credential proceeds as the anonymous caller."""
    return tuple(path for name, s in SURFACES.items() if s.anonymous for path in http_paths(name))


def require_surface(surface: str) -> SurfaceDecl:
    module, _, name = _surface(surface).declaration.partition(":")
    declared: SurfaceDecl = getattr(import_module(module), name)
    return declared


def build_server(surface: str, container: Container, local_files: LocalFilePolicy) -> SurfaceServer:
    return require_surface(surface).serve(container, local_files)
