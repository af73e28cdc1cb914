"""The ASGI application: REST routes under /v1, MCP endpoints under /mcp, health and OpenAPI."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from cairn import __version__
from cairn.auth.rate_limit import RateLimiter
from cairn.bootstrap import Container
from cairn.entrypoints.auth_http import METADATA_PATH, AuthMiddleware, base_url, resource_metadata
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

    settings = container.settings

    @app.get(METADATA_PATH, tags=["auth"])
    @app.get(f"{METADATA_PATH}/mcp", include_in_schema=False)
    def protected_resource(request: Request) -> dict[str, Any]:
        """RFC 9728 protected resource metadata: where clients get tokens for /mcp."""
        headers = {k.lower(): v for k, v in request.headers.items()}
        return resource_metadata(base_url(request.scope, headers, settings.public_url), settings.jwt_issuer)

    install_rest(app, container)
    mount_mcp(app, container)
    # Per-principal rate limits on the embedded server; API Gateway throttles on AWS (template.yaml).
    limited = settings.backend == "local" and settings.rate_limit_per_s > 0
    limiter = RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst) if limited else None
    app.add_middleware(
        AuthMiddleware, authenticator=container.authenticator, limiter=limiter, public_url=settings.public_url
    )
    return app
