"""The ASGI application: REST routes under /v1, MCP endpoints under /mcp, health and OpenAPI."""

from __future__ import annotations

from fastapi import FastAPI

from cairn import __version__
from cairn.bootstrap import Container
from cairn.entrypoints.mcp.http import mount_mcp
from cairn.entrypoints.rest import install_rest


def create_app(container: Container) -> FastAPI:
    app = FastAPI(
        title="Cairn",
        version=__version__,
        description="Memory for AI agents: store, search, recall. MCP at /mcp, REST under /v1.",
    )

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    install_rest(app, container)
    mount_mcp(app, container)
    return app
