"""Cairn's authorization-server endpoints (auth/oauth/): the discovery documents, at the root and at
the path-suffixed forms clients derive from an endpoint's URL, and dynamic client registration.
Mounted only when remote sign-in is configured. None needs a credential: a client reads them and
registers before it has a token.

Registration answers as RFC 7591 says: 201 with the client's information, or 400 with
`{"error": "invalid_redirect_uri" | "invalid_client_metadata", "error_description": ...}`; 429
with Retry-After past the address's rate or the server's cap; 503 when the user pool cannot be
reached. Nothing the client sent beyond the offending URI, and never a secret, is echoed or logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from pydantic import ValidationError
from starlette.responses import JSONResponse, Response

from cairn import off_loop
from cairn.auth.oauth.errors import RegistrationRefused
from cairn.auth.oauth.metadata import (
    AS_METADATA_PATH,
    OPENID_PATH,
    REGISTER_PATH,
    SignIn,
    openid_configuration,
    server_metadata,
)
from cairn.auth.oauth.registration import ClientMetadata, ClientRegistration
from cairn.domain.errors import Unavailable
from cairn.entrypoints.auth_http import base_url

REGISTRATION_BODY = 16 * 1024
"""The most a registration request may carry (ten 2 KB URIs and the rest, with room to spare)."""
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def install_sign_in(app: FastAPI, sign_in: SignIn, public_url: str | None) -> tuple[str, ...]:
    """Mount the routes; returns the paths the authentication middleware lets through (each also
    covers what lies below it)."""

    def document(build: Callable[[str, SignIn], dict[str, Any]]) -> Callable[[Request], dict[str, Any]]:
        def metadata(request: Request) -> dict[str, Any]:
            """Cairn's authorization-server metadata: Cognito's sign-in endpoints, PKCE (S256) and
            Cairn's client registration."""
            headers = {k.lower(): v for k, v in request.headers.items()}
            return build(base_url(request.scope, headers, public_url), sign_in)

        return metadata

    for path, build in ((AS_METADATA_PATH, server_metadata), (OPENID_PATH, openid_configuration)):
        app.get(path, tags=["auth"])(document(build))
        app.get(path + "/{suffix:path}", include_in_schema=False)(document(build))
    if sign_in.registration is not None:
        app.post(REGISTER_PATH, tags=["auth"], status_code=201)(_register(sign_in.registration))
    return (AS_METADATA_PATH, OPENID_PATH, REGISTER_PATH)


def _register(registration: ClientRegistration) -> Callable[[Request], Any]:
    async def register(request: Request) -> Response:
        """Dynamic client registration (RFC 7591): an app client for exactly these redirect URIs."""
        try:
            metadata = ClientMetadata.model_validate_json(await request.body())
        except ValidationError as exc:
            return _error(400, "invalid_client_metadata", _described(exc))
        source = request.client.host if request.client else "unknown"
        try:
            info = await off_loop.run_sync(registration.register, metadata, source)
        except RegistrationRefused as refused:
            retry = refused.retry_after_s
            extra = {"Retry-After": str(retry)} if retry else {}
            return _error(refused.status, refused.code, refused.message, extra)
        except Unavailable as exc:
            extra = {"Retry-After": str(exc.retry_after_s)}
            return _error(503, "temporarily_unavailable", exc.message, extra)
        return JSONResponse(info.model_dump(exclude_none=True), status_code=201, headers=NO_STORE)

    return register


def _described(exc: ValidationError) -> str:
    """What is wrong, by member, without quoting what was sent."""
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
        for e in exc.errors(include_input=False, include_url=False)[:3]
    ]
    return "the registration request is not valid client metadata (" + "; ".join(problems) + ")"


def _error(status: int, code: str, description: str, headers: dict[str, str] | None = None) -> Response:
    body = {"error": code, "error_description": description}
    return JSONResponse(body, status_code=status, headers={**NO_STORE, **(headers or {})})
