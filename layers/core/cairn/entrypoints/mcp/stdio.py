"""MCP over stdio (`cairn mcp`, or `python -m cairn.entrypoints.mcp.stdio`).

The server runs as the caller's own process, so memory_ingest_file may read any file the caller
can (no ingest root), unlike the HTTP server.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import anyio

from cairn.domain.errors import CairnError
from cairn.entrypoints.mcp.server import build_server, require_surface
from cairn.entrypoints.mcp.tools import SurfaceDeps
from cairn.services.ingest import LocalFilePolicy

if TYPE_CHECKING:
    from cairn.bootstrap import Container


def run_stdio(container: Container, surface: str = "canonical") -> None:
    deps = SurfaceDeps(container, LocalFilePolicy(root=None, max_bytes=container.settings.max_file_bytes))
    server = build_server(surface, deps)
    anyio.run(server.run_stdio_async)


def main(argv: list[str]) -> int:
    """`python -m cairn.entrypoints.mcp.stdio [surface]`, configured by CAIRN_* environment variables."""
    from cairn.bootstrap import build_container
    from cairn.config import Settings

    surface = argv[0] if argv else "canonical"
    try:
        require_surface(surface)  # before opening any storage
    except CairnError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    run_stdio(build_container(Settings()), surface=surface)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
