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


def test_mcp_routes_are_guarded_by_the_function_and_rest_by_the_gateway(template: dict[str, Any]) -> None:
    by_route = routes(template)
    assert by_route[("HttpApi", "/mcp")] == by_route[("HttpApi", "/mcp/{proxy+}")] == "NONE"
    assert by_route[("HttpApi", "/zengram/{proxy+}")] == "NONE"  # x-api-key, checked by the function
    assert by_route[("HttpApi", "/v1/{proxy+}")] is None  # the API's default: the JWT authorizer
    assert template["Resources"]["HttpApi"]["Properties"]["Auth"]["DefaultAuthorizer"] == "Jwt"
    # The IAM API keeps SigV4 on every route: only the gateway can check a signature.
    assert all(auth is None for (api, _), auth in by_route.items() if api == "IamApi")


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


def test_every_client_is_an_audience_of_the_function_and_the_gateway(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in environments()["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    gateway = template["Resources"]["HttpApi"]["Properties"]["Auth"]["Authorizers"]["Jwt"]
    cognito_audiences = gateway["JwtConfiguration"]["audience"]["Fn::If"][1]

    assert set(settings.jwt_audience) == {"UserPoolClient", "SignInClient", "MachineClient"}
    assert {ref["Ref"] for ref in cognito_audiences} == set(settings.jwt_audience)
    assert settings.jwt_scope_prefix == "cairn/" and settings.jwt_user_groups is True
    assert json.loads(environments()["ApiFunction"]["CAIRN_JWT_AUDIENCE"])  # valid JSON for the function
