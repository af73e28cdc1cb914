"""The ASGI application: REST routes under /v1, MCP endpoints under /mcp, health and OpenAPI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from starlette.types import Scope

from cairn import __version__
from cairn.auth.authenticate import OPEN
from cairn.auth.in_flight import InFlight
from cairn.auth.rate_limit import FailedSignIns, RateLimiter
from cairn.container import Container
from cairn.entrypoints.api_docs import install_api_docs
from cairn.entrypoints.auth_http import METADATA_PATH, AuthMiddleware, base_url, resource_metadata
from cairn.entrypoints.body_limit import BodyLimitMiddleware
from cairn.entrypoints.counted_calls import CountedCalls
from cairn.entrypoints.host_guard import WILDCARD_BINDS, HostGuard, served_hosts
from cairn.entrypoints.mcp.mount import mount_mcp
from cairn.entrypoints.mcp.registry import DEFAULT_SURFACE, SURFACES, http_path, http_paths
from cairn.entrypoints.oauth_http import REGISTRATION_BODY, install_sign_in
from cairn.entrypoints.public_scheme import PublicScheme
from cairn.entrypoints.rest import body_limit, install_rest
from cairn.entrypoints.ui import install_ui
from cairn.entrypoints.ui.session import OPEN_PATHS as UI_OPEN_PATHS
from cairn.off_loop import CallsInFlight
from cairn.options import Limits


def create_app(
    container: Container, calls: CallsInFlight | None = None, surface_built: Callable[[], None] | None = None
) -> FastAPI:
    """`calls`: where every HTTP call (MCP, REST, the web UI) counts its worker threads, for
    `cairn serve`'s stop to wait for those its shutdown cut short (cairn/off_loop.py,
    entrypoints/counted_calls.py); None (Lambda): not counted. `surface_built`: run after an MCP
    surface is built, on its first call (mcp/mount.py)."""
    app = FastAPI(
        title="Cairn",
        version=__version__,
        description="Memory for AI agents: store, search, recall. MCP at /mcp, REST under /v1.",
        docs_url=None,  # served by install_api_docs: pinned, with digests and a strict policy
        redoc_url=None,
    )
    install_api_docs(app)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, Any]:  # on the loop, no worker thread (on AWS one read, each 30 s)
        """Up; `rebuilding` lists the brains whose index is being checked after a start or
        rebuilt (their searches answer 503 with Retry-After until it is done) with how far each
        has got. This route asks for no credential (and reads none it is sent), so it names a
        brain (`brain_id`) only on a server open to its owner, and only the owner's (tenant
        `local`): another tenant's (a token's, a key's, a JWT's) rebuild is listed unnamed, and on
        a server that asks for credentials, or on AWS, no brain is named to anybody.
        `maintenance`, when there is any, is what this process's last sweep found left to do for
        brains, or on AWS (no sweep in the API function) what the scheduled sweep's last report
        kept in its record says, one store read at most every 30 s (services/maintenance.py), with
        `swept_at`: how many brains' memory counts are `over` or being built, whose creation-time
        entries are being built, whose deletions are still settling, which the concept-reach pass
        has still to scan and how many it has done (and which of its owner's, on an open server);
        it changes no status."""
        rebuilding = container.health.rebuilding.now()
        named = container.authenticator.open
        kept = container.health.maintenance.last() if container.health.maintenance is not None else None
        # the open server's caller is its owner: another tenant's brains (a token's, a key's) go unnamed
        said = None if kept is None or kept.quiet else kept.summary(named=named, tenant=OPEN.tenant)
        maintenance = {} if said is None else {"maintenance": said}
        if not rebuilding:
            return {"status": "ok", "version": __version__, **maintenance}
        brains = [
            {
                # the open server's caller is its owner: another tenant's rebuild is counted, not named
                **({"brain_id": brain_id} if named and p.tenant == OPEN.tenant else {}),
                "phase": "checking" if p.checking else "rebuilding",
                "done": p.done,
                "total": p.total,
                "retry_after_s": p.retry_after_s(),
            }
            for brain_id, p in sorted(rebuilding.items())
        ]
        return {"status": "rebuilding", "version": __version__, "rebuilding": brains, **maintenance}

    http = container.options.http
    sign_in = container.sign_in

    def metadata_of(resource: str) -> Callable[[Request], dict[str, Any]]:
        def protected_resource(request: Request) -> dict[str, Any]:
            """RFC 9728 protected resource metadata: where clients get tokens for this endpoint."""
            headers = {k.lower(): v for k, v in request.headers.items()}
            base = base_url(request.scope, headers, http.public_url)
            # Signing in through Cairn's own authorization-server metadata (auth/oauth/), when served.
            issuer = base if sign_in is not None else http.jwt_issuer
            return resource_metadata(base, issuer, resource, http.jwt_scope_prefix)

        return protected_resource

    # The bare document names /mcp; each MCP endpoint also has its path-suffixed one (RFC 9728 3.1),
    # which MCP clients ask for first.
    app.get(METADATA_PATH, tags=["auth"])(metadata_of(http_path(DEFAULT_SURFACE)))
    for surface in SURFACES:
        path = http_path(surface)
        for served in http_paths(surface):  # also `/mcp/mnemosyne/`, which clients may derive from the URL
            app.get(f"{METADATA_PATH}{served}", include_in_schema=False)(metadata_of(path))

    open_paths = install_sign_in(app, sign_in, http.public_url) if sign_in is not None else ()
    install_rest(app, container)
    install_ui(app, container)
    public_tools = mount_mcp(app, container, calls, surface_built)
    # Per-principal rate limits on the embedded server; API Gateway throttles on AWS (template.yaml).
    limiter = None if http.rate_per_s is None else RateLimiter(http.rate_per_s, http.rate_burst)
    app.state.rate_limiter = limiter  # a UI sign-in takes from its principal's bucket (ui/session.py)
    # Guessing credentials: only a server that wants them counts the refused ones, per address.
    per_min = None if container.authenticator.open else http.failures_per_min
    failures = FailedSignIns(per_min, http.failure_burst) if per_min else None
    app.state.failed_sign_ins = failures  # the UI's sign-in form counts in the same buckets
    app.add_middleware(
        AuthMiddleware,
        authenticator=container.authenticator,
        ui_sessions=container.ui_sessions,
        limiter=limiter,
        failures=failures,
        limit_open=http.limit_open,
        public_url=http.public_url,
        scope_prefix=http.jwt_scope_prefix,
        public_tools=public_tools,
        open_paths=open_paths,
        in_flight=InFlight(http.max_in_flight, counts_open=http.limit_open_in_flight)
        if http.max_in_flight
        else None,
    )
    # Outermost: an oversized body is refused before anything, authentication included, reads it.
    app.add_middleware(BodyLimitMiddleware, limit_for=_body_limit(container.options.limits, open_paths))
    if (http.public_url or "").startswith("https://"):
        app.add_middleware(PublicScheme)
    if not http.on_aws:  # before anything else: a rebound name or another site's page (host_guard.py)
        hosts = None if http.host in WILDCARD_BINDS else served_hosts(http.host, http.public_url)
        app.add_middleware(HostGuard, hosts=hosts)
    if calls is not None:  # around everything: authentication's lookups off the loop are counted too
        app.add_middleware(CountedCalls, calls=calls)
    return app


UI_FORM_BODY = 64 * 1024
"""The sign-in form's fields: a pasted key or JWT (a few KB), its form token, where to go next."""


def _body_limit(limits: Limits, open_paths: tuple[str, ...]) -> Callable[[Scope], int | None]:
    """REST's caps, and a small one for what anybody may send without a credential (registration,
    the web UI's sign-in and sign-out forms: a key, a form token and where to go next)."""
    rest = body_limit(limits)

    def limit(scope: Scope) -> int | None:
        path = scope.get("path")
        if path in open_paths:
            return REGISTRATION_BODY
        return UI_FORM_BODY if path in UI_OPEN_PATHS else rest(scope)

    return limit
