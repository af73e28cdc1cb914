"""What template.yaml gives remote MCP clients that sign in: MCP routes the function guards itself
(so a 401 can name the metadata), a Cognito domain, a resource server with Cairn's scopes, a PKCE
sign-in client with the MCP Inspector's callbacks among its defaults, and a client-credentials one.
And the web UI's: its routes, and a PKCE client back to the API's /ui/callback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

from cairn.auth.principal import SCOPES
from cairn.config import Settings
from tests.unit.test_template_settings import environments, resolve

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

    assert set(settings.jwt_audience) == {"UserPoolClient", "SignInClient", "MachineClient", "WebUiClient"}
    assert settings.ui_client_id == "WebUiClient"  # the web UI signs users in with it
    assert settings.jwt_id_token_audience == ["UserPoolClient"]  # the CLI's ID tokens, no other's
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


API_FUNCTION_URI = (
    "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/"
    "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:cairn-api-${Stage}/invocations"
)


def test_the_web_ui_client_is_a_public_pkce_client_back_to_the_apis_ui_callback(
    template: dict[str, Any],
) -> None:
    resource = template["Resources"]["WebUiClient"]
    assert resource["Type"] == "AWS::Cognito::UserPoolClient" and resource["Condition"] == "UseCognito"
    client = resource["Properties"]
    assert client["GenerateSecret"] is False and client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert {"openid", *(f"cairn/{s}" for s in SCOPES)} <= set(client["AllowedOAuthScopes"])
    own = "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/ui/callback"
    condition, with_more, alone = client["CallbackURLs"]["Fn::If"]
    assert alone == [{"Fn::Sub": own}]  # the default: this API's own callback
    assert condition == "HasWebUiCallbacks" and template["Parameters"]["WebUiCallbackUrls"]["Default"] == ""
    assert json.dumps(with_more).count(own) == 1 and "WebUiCallbackUrls" in json.dumps(with_more)
    custom = {"WebUiCallbackUrls": {"Default": "https://memory.example.com/ui/callback"}}
    both = resolve(with_more["Fn::Split"][1], custom).split(with_more["Fn::Split"][0])
    assert both == ["https://HttpApi.execute-api.x.x/ui/callback", "https://memory.example.com/ui/callback"]
    assert "custom:tenant" not in client["WriteAttributes"]
    assert environments()["ApiFunction"]["CAIRN_UI_CLIENT_ID"] == "WebUiClient"
    by_route = routes(template)
    # Open at the gateway: the function checks the sign-in cookie (or sends the browser to sign in).
    assert by_route[("HttpApi", "/ui")] == by_route[("HttpApi", "/ui/{proxy+}")] == "NONE"


def test_the_http_api_reaches_the_function_by_name_not_by_reference(template: dict[str, Any]) -> None:
    """The UI client names the API (its callback) and the function names the UI client, so the API
    must not depend on the function: every route's integration is in the API's definition, naming
    the function by the ARN its name gives (SAM adds, with a reference, only the ones missing)."""
    api = template["Resources"]["HttpApi"]["Properties"]
    assert "ApiFunction" not in json.dumps(api)
    name = template["Resources"]["ApiFunction"]["Properties"]["FunctionName"]
    assert name == {"Fn::Sub": "cairn-api-${Stage}"}
    paths = api["DefinitionBody"]["paths"]
    events = template["Resources"]["ApiFunction"]["Properties"]["Events"]
    served = {
        (e["Properties"]["Path"], e["Properties"]["Method"].lower())
        for e in events.values()
        if e["Properties"]["ApiId"] == {"Ref": "HttpApi"}
    }
    for path, method in served:
        key = "x-amazon-apigateway-any-method" if method == "any" else method
        integration = paths[path][key]["x-amazon-apigateway-integration"]
        assert integration["type"] == "aws_proxy" and integration["payloadFormatVersion"] == "2.0", path
        assert integration["uri"] == {"Fn::Sub": API_FUNCTION_URI}, path
    assert len(served) == sum(len(methods) for methods in paths.values())  # nothing routed elsewhere
