"""What template.yaml gives remote MCP clients that sign in: MCP routes the function guards itself
(so a 401 can name the metadata), a Cognito domain, a resource server with Cairn's scopes, a PKCE
sign-in client with the MCP Inspector's callbacks among its defaults, and a client-credentials one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

from cairn.auth.principal import SCOPES
from cairn.config import Settings
from tests.unit.test_template_settings import environments

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    decoded, _ = decode_str(TEMPLATE.read_text())
    assert decoded is not None
    return dict(decoded)


def routes(template: dict[str, Any]) -> dict[tuple[str, str], Any]:
    events = template["Resources"]["ApiFunction"]["Properties"]["Events"]
    return {
        (e["Properties"]["ApiId"]["Ref"], e["Properties"]["Path"]): e["Properties"]
        .get("Auth", {})
        .get("Authorizer")
        for e in events.values()
    }


def test_the_function_guards_every_route_of_the_http_api_and_the_gateway_the_iam_api(
    template: dict[str, Any],
) -> None:
    by_route = routes(template)
    assert by_route[("HttpApi", "/mcp")] == by_route[("HttpApi", "/mcp/{proxy+}")] == "NONE"
    assert by_route[("HttpApi", "/zengram/{proxy+}")] == "NONE"  # x-api-key, checked by the function
    # A JWT or a Cairn API key (Bearer cairn_key_...), both checked by the function (docs/AWS.md).
    assert by_route[("HttpApi", "/v1/{proxy+}")] == "NONE"
    assert all(auth == "NONE" for (api, _), auth in by_route.items() if api == "HttpApi")
    assert "Auth" not in template["Resources"]["HttpApi"]["Properties"]  # no gateway authorizer left
    # The IAM API keeps SigV4 on every route: only the gateway can check a signature.
    assert all(auth is None for (api, _), auth in by_route.items() if api == "IamApi")
    assert template["Resources"]["IamApi"]["Properties"]["Auth"]["DefaultAuthorizer"] == "AWS_IAM"


def test_the_resource_server_offers_every_cairn_scope(template: dict[str, Any]) -> None:
    server = template["Resources"]["ResourceServer"]["Properties"]
    assert server["Identifier"] == "cairn"
    assert {s["ScopeName"] for s in server["Scopes"]} == set(SCOPES)
    domain = template["Resources"]["UserPoolDomain"]
    assert domain["Type"] == "AWS::Cognito::UserPoolDomain" and domain["Condition"] == "UseCognito"


def test_the_sign_in_client_is_a_public_pkce_client_with_the_inspectors_callbacks(
    template: dict[str, Any],
) -> None:
    client = template["Resources"]["SignInClient"]["Properties"]
    callbacks = template["Parameters"]["OAuthCallbackUrls"]["Default"].split(",")
    assert client["GenerateSecret"] is False and client["AllowedOAuthFlows"] == ["code"]
    assert client["CallbackURLs"] == {"Ref": "OAuthCallbackUrls"}
    assert {"http://localhost:6274/oauth/callback", "http://localhost:6274/oauth/callback/debug"} <= set(
        callbacks
    )
    assert {f"cairn/{s}" for s in SCOPES} <= set(client["AllowedOAuthScopes"])
    assert "custom:tenant" not in client["WriteAttributes"]


def test_the_machine_client_uses_client_credentials_with_its_parameters_scopes(
    template: dict[str, Any],
) -> None:
    client = template["Resources"]["MachineClient"]["Properties"]
    assert client["GenerateSecret"] is True and client["AllowedOAuthFlows"] == ["client_credentials"]
    assert template["Parameters"]["MachineClientScopes"]["Default"] == "documents:read,documents:write"


def test_every_client_is_an_audience_of_the_function(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in environments()["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    settings = Settings()

    assert set(settings.jwt_audience) == {"UserPoolClient", "SignInClient", "MachineClient"}
    assert settings.jwt_scope_prefix == "cairn/" and settings.jwt_user_groups is True
    assert json.loads(environments()["ApiFunction"]["CAIRN_JWT_AUDIENCE"])  # valid JSON for the function


def test_the_function_is_the_clients_authorization_server_in_front_of_the_pool(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = environments()["ApiFunction"]
    assert set(env) >= {"CAIRN_COGNITO_DOMAIN", "CAIRN_COGNITO_USER_POOL_ID", "CAIRN_OAUTH_ALLOWED_REDIRECTS"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert settings.cognito_domain and settings.cognito_user_pool_id  # metadata and registration on
    statements = template["Resources"]["ApiRole"]["Properties"]["Policies"]
    granted = json.dumps(statements)
    assert "cognito-idp:CreateUserPoolClient" in granted and "cognito-idp:DeleteUserPoolClient" in granted
    assert routes(template).get(("HttpApi", "/register")) == "NONE"  # clients register before a token
