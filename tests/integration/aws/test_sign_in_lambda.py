"""Cairn's authorization-server metadata and client registration through the API function, driven
with API Gateway HTTP API v2 events: the issuer is the API's own URL as API Gateway hands it over,
and registrations are counted per `sourceIp`, across warm invocations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.entrypoints.aws_lambda import Handler, api_handler
from tests.events.apigw import LambdaContext, http_event, json_of
from tests.fakes.container import fake_container
from tests.support.cognito_pool import cognito_pool

pytestmark = pytest.mark.integration
API = "https://abc123.execute-api.us-east-1.amazonaws.com"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf123"
DOMAIN = "https://cairn-dev-123456789012.auth.us-east-1.amazoncognito.com"


def invoke(h: Handler, method: str, path: str, *, source: str = "203.0.113.7", body: Any = None) -> Any:
    event = http_event(method, path, anonymous=True, body=body, headers={"x-forwarded-proto": "https"})
    event["requestContext"]["http"]["sourceIp"] = source
    return h(event, LambdaContext())


def test_metadata_and_registration_through_api_gateway_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cognito_pool(monkeypatch) as pool:
        settings = {
            "backend": "aws",
            "jwt_issuer": ISSUER,
            "jwt_audience": [pool.static_client_id],
            "jwt_scope_prefix": "cairn/",
            "jwt_user_groups": True,
            "cognito_domain": DOMAIN,
            "cognito_user_pool_id": pool.pool_id,
            "aws_endpoint_url": pool.endpoint,
            "oauth_registrations_per_hour": 1,
        }
        h = api_handler(lambda: fake_container(tmp_path, **settings))

        resource = json_of(invoke(h, "GET", "/.well-known/oauth-protected-resource/mcp"))
        assert resource["authorization_servers"] == [API] and resource["resource"] == f"{API}/mcp"
        document = json_of(invoke(h, "GET", "/.well-known/oauth-authorization-server"))
        assert document["issuer"] == API and document["registration_endpoint"] == f"{API}/register"
        assert document["authorization_endpoint"] == f"{DOMAIN}/oauth2/authorize"
        assert document["code_challenge_methods_supported"] == ["S256"]

        body = {"redirect_uris": ["http://127.0.0.1:41234/callback"], "client_name": "Claude Code (cairn)"}
        first = invoke(h, "POST", "/register", body=body)
        assert first["statusCode"] == 201, first
        made = json.loads(first["body"])
        assert pool.app_client(made["client_id"])["CallbackURLs"] == body["redirect_uris"]  # type: ignore[index]
        again = invoke(h, "POST", "/register", body=body)
        assert again["statusCode"] == 429 and "retry-after" in again["headers"]
        assert invoke(h, "POST", "/register", body=body, source="198.51.100.9")["statusCode"] == 201
        refused = invoke(
            h, "POST", "/register", body={"redirect_uris": ["https://evil.example/cb"]}, source="1.2.3.4"
        )
        assert refused["statusCode"] == 400 and json.loads(refused["body"])["error"] == "invalid_redirect_uri"
