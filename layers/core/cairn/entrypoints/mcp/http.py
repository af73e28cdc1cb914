"""MCP over streamable HTTP: the endpoints of every surface of the registry, at its paths (mounted on
the FastAPI app by mcp/mount.py, which imports this module, and the MCP SDK, when a surface is built).

Stateless and per request (docs/ARCHITECTURE.md, "MCP serving"): every HTTP request gets a
fresh streamable-HTTP sub-app whose lifespan is entered around the call, so the same app works
under uvicorn and under Mangum with `lifespan="off"`. Responses are plain JSON, except for a request
that carries a progress token: JSON-response mode would drop its notifications, so it gets SSE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import JSONRPCMessage, JSONRPCRequest
from starlette.types import Receive, Scope, Send

from cairn.auth.principal import PUBLIC
from cairn.entrypoints.asgi_body import buffered
from cairn.entrypoints.host_guard import WILDCARD_BINDS, served_hosts
from cairn.entrypoints.mcp.kit import SurfaceServer
from cairn.entrypoints.mcp.kit.inbound import Refused, message_of
from cairn.entrypoints.mcp.registry import SURFACES, build_server, http_paths
from cairn.entrypoints.rest.problems import mcp_error
from cairn.services.ingest.inputs import LocalFilePolicy

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.off_loop import CallsInFlight


class PerRequestMCP:
    """ASGI endpoint: a fresh stateless session manager per HTTP request."""

    def __init__(
        self, server: SurfaceServer, *, path: str, security: TransportSecuritySettings, max_body: int
    ) -> None:
        self.server = server
        self.path = path
        self.security = security
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, receive = await buffered(receive, self.max_body)
        message: JSONRPCMessage | None = None
        if scope.get("method") == "POST":  # checked as stdio checks a line (kit/inbound.py)
            json_scope = _as_json(scope)
            if json_scope is None:
                await mcp_error(415, UNSUPPORTED)(scope, receive, send)
                return
            scope = json_scope
            try:
                message = message_of(body)
            except Refused as refused:
                said = mcp_error(
                    refused.status, refused.message, code=refused.code, request_id=refused.request_id
                )
                await said(scope, receive, send)
                return
        sub = self.server.streamable_http_app(
            streamable_http_path=self.path,
            stateless_http=True,
            # JSON-response mode drops progress notifications; a call that asks for them gets SSE,
            # unless its client takes only JSON (406 before, though the same call without a token
            # was answered): then the result alone.
            json_response=not (_wants_progress(message) and _takes_sse(scope)),
            transport_security=self.security,
            max_request_body_size=self.max_body,
        )
        async with sub.router.lifespan_context(sub):
            await sub(scope, receive, send)


UNSUPPORTED = "Unsupported Media Type: Content-Type must be application/json"


def _as_json(scope: Scope) -> Scope | None:
    """The request with its media type written as the SDK compares it (`application/json`, in
    lower case: media types are case-insensitive, and the SDK refused `Application/JSON`), or None
    when it is not JSON (the SDK answered that in plain text, which a client cannot read as the
    JSON-RPC error every other refusal of this endpoint is)."""
    headers = list(scope.get("headers", ()))
    for i, (name, value) in enumerate(headers):
        if name.lower() != b"content-type":
            continue
        media, sep, params = value.partition(b";")
        if media.strip().lower() != b"application/json":
            return None
        headers[i] = (name, b"application/json" + sep + params)
        return {**scope, "headers": headers}
    return None


def _takes_sse(scope: Scope) -> bool:
    """Whether the request's Accept header names text/event-stream (or any type)."""
    accepted = b",".join(value for name, value in scope.get("headers", ()) if name.lower() == b"accept")
    types = {part.split(b";")[0].strip().lower() for part in accepted.split(b",")}
    return bool(types & {b"text/event-stream", b"text/*", b"*/*"})


def _wants_progress(message: JSONRPCMessage | None) -> bool:
    """True when the message is a request that carries `_meta.progressToken` (a batch is refused
    before this is asked)."""
    if not isinstance(message, JSONRPCRequest) or not message.params:
        return False
    meta = message.params.get("_meta")
    return isinstance(meta, dict) and meta.get("progressToken") is not None


def transport_security(
    host: str, *, behind_gateway: bool = False, public_url: str | None = None
) -> TransportSecuritySettings:
    """The SDK's own DNS-rebinding protection, on the names every route is guarded for
    (entrypoints/host_guard.py). A server bound to every interface, or behind API Gateway (whose
    Host is the API's domain, unknown in advance: a 421 otherwise), is meant to be reached under
    names it cannot know, so the Host check is off there (authentication, not the Host header,
    protects such a deployment)."""
    if behind_gateway or host in WILDCARD_BINDS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = served_hosts(host, public_url)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for h in hosts for form in (h, f"{h}:*")],
        allowed_origins=[
            f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")
        ],
    )


def surface_endpoints(
    surface: str, container: Container, calls: CallsInFlight | None = None
) -> dict[str, PerRequestMCP]:
    """The surface's MCP server, built, as an endpoint per path it is served at; memory_ingest_file
    reads only below the ingest root. Refuses a server whose tools callers without a credential may
    call differ from the registry's declaration (`public_tools`), which the authentication
    middleware is given before any server is built (mcp/mount.py). `calls`: where its calls'
    threads are counted (cairn/off_loop.py), for `cairn serve`'s stop."""
    http, limits = container.options.http, container.options.limits
    files = LocalFilePolicy(root=http.ingest_root, max_bytes=limits.max_file_bytes)
    security = transport_security(http.host, behind_gateway=http.on_aws, public_url=http.public_url)
    max_body = limits.json_body_limit  # the largest note, however escaped (config.py)
    server = build_server(surface, container, files)
    server.calls = calls
    public = frozenset(name for name, scope in server.scopes.items() if scope == PUBLIC)
    declared = SURFACES[surface]
    if public != (frozenset(declared.public_tools) if declared.anonymous else public):
        raise RuntimeError(f"surface {surface}: public tools {sorted(public)} are not the registry's")
    return {
        path: PerRequestMCP(server, path=path, security=security, max_body=max_body)
        for path in http_paths(surface)
    }
