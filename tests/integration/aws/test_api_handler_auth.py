"""Principals arriving through API Gateway HTTP API v2 events into the API function: JWT claims the
authorizer verified, SigV4 (IAM) identities mapped to tenants, and events with no authorizer."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.entrypoints.aws_lambda import Handler, api_handler
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.unit.auth.tokens import SigningKey, jwks, rsa_key
from tests.unit.test_template_settings import environments

ACCOUNT = "123456789012"
ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/cairn-agents/session-1"


def handler(tmp_path: Path) -> Handler:
    return api_handler(
        lambda: fake_container(
            tmp_path,
            backend="aws",
            jwt_tenant_claim="custom:tenant",
            jwt_default_tenant="dev",
            iam_tenants={ACCOUNT: "dev", "arn:aws:iam::999999999999:role/partner": "partner"},
        )
    )


def iam(arn: str, account: str = ACCOUNT) -> dict[str, str]:
    return {"accountId": account, "userArn": arn, "callerId": "AROAEXAMPLE:session-1", "userId": "AROA"}


def test_jwt_claims_give_the_tenant_subject_and_group_scopes(tmp_path: Path) -> None:
    h = handler(tmp_path)
    admin = {"sub": "alice", "cognito:groups": "[documents:read documents:write brains:admin]"}
    reader = {"sub": "bob", "cognito:groups": "[documents:read]"}
    stranger = {
        "sub": "eve",
        "custom:tenant": "other",
        "scope": "documents:read documents:write brains:admin",
    }

    created = h(
        http_event("POST", "/v1/brains", body={"name": "Team", "visibility": "tenant"}, claims=admin),
        LambdaContext(),
    )
    assert created["statusCode"] == 201
    read = h(http_event("GET", "/v1/brains/team", claims=reader), LambdaContext())
    append = http_event(
        "POST",
        "/v1/brains/team/documents/append",
        query={"path": "a.md"},
        body=b"x",
        claims=reader,
        headers={"content-type": "application/octet-stream"},
    )
    write = h(append, LambdaContext())
    other = h(http_event("GET", "/v1/brains/team", claims=stranger), LambdaContext())

    assert read["statusCode"] == 200
    assert write["statusCode"] == 403 and json_of(write)["code"] == "forbidden"
    # another tenant's brain is answered as none: the same words as a slug nobody holds
    missing = h(http_event("GET", "/v1/brains/nosuchteam", claims=stranger), LambdaContext())
    assert other["statusCode"] == missing["statusCode"] == 404 and "Team" not in json_of(other)["detail"]
    assert json_of(other)["detail"] == json_of(missing)["detail"].replace("nosuchteam", "team")
    listed = json_of(h(http_event("GET", "/v1/brains", claims=stranger), LambdaContext()))["items"]
    assert listed == []  # the brain is dev's, invisible to tenant "other"


def test_iam_callers_are_mapped_to_tenants_and_unmapped_ones_refused(tmp_path: Path) -> None:
    h = handler(tmp_path)
    admin = {"sub": "alice", "cognito:groups": "[documents:read documents:write brains:admin]"}
    h(
        http_event("POST", "/v1/brains", body={"name": "Team", "visibility": "tenant"}, claims=admin),
        LambdaContext(),
    )

    ours = h(http_event("GET", "/v1/brains/team", iam=iam(ROLE)), LambdaContext())
    partner = h(
        http_event(
            "GET",
            "/v1/brains/team",
            iam=iam("arn:aws:sts::999999999999:assumed-role/partner/s", "999999999999"),
        ),
        LambdaContext(),
    )
    unknown = h(
        http_event(
            "GET", "/v1/brains", iam=iam("arn:aws:sts::555555555555:assumed-role/x/s", "555555555555")
        ),
        LambdaContext(),
    )

    assert ours["statusCode"] == 200
    assert partner["statusCode"] == 404  # another tenant's brain: as if there were none
    assert unknown["statusCode"] == 403 and json_of(unknown)["code"] == "forbidden"


def test_an_event_without_an_authorizer_or_credential_is_refused(tmp_path: Path) -> None:
    h = handler(tmp_path)
    refused = h(http_event("GET", "/v1/brains", anonymous=True), LambdaContext())
    health = h(http_event("GET", "/healthz", anonymous=True), LambdaContext())
    metadata = h(http_event("GET", "/.well-known/oauth-protected-resource", anonymous=True), LambdaContext())

    assert refused["statusCode"] == 401
    assert "resource_metadata=" in refused["headers"]["www-authenticate"]
    assert health["statusCode"] == 200 and metadata["statusCode"] == 200
    assert json_of(metadata)["resource"] == "https://abc123.execute-api.us-east-1.amazonaws.com/mcp"


# What mcp-proxy-for-aws sends: the MCP SDK's streamable-HTTP POSTs, signed with SigV4 for
# execute-api; API Gateway's IAM authorizer checks the signature and passes every header on, with
# the caller's identity in requestContext.authorizer.iam.
PROXY_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "user-agent": "python-httpx/0.28.1",
    "x-amz-date": "20261122T040000Z",
    "x-amz-security-token": "IQoJb3JpZ2luX2VjEXAMPLE",
    "authorization": (
        "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20261122/us-east-1/execute-api/aws4_request, "
        "SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token, Signature=0f1e2d3c"
    ),
    "x-forwarded-proto": "https",
    "x-forwarded-port": "443",
}


def proxy_event(session: str, message: dict[str, Any], role: str = "cairn-agents") -> dict[str, Any]:
    headers = dict(PROXY_HEADERS)
    if message.get("method") != "initialize":
        headers["mcp-protocol-version"] = "2025-06-18"
    event = http_event("POST", "/mcp", body=json.dumps(message), headers=headers, anonymous=True)
    event["routeKey"] = event["requestContext"]["routeKey"] = "ANY /mcp"
    event["requestContext"]["authorizer"] = {
        "iam": {
            "accessKey": "ASIAEXAMPLE",
            "accountId": ACCOUNT,
            "callerId": f"AROAEXAMPLE:{session}",
            "cognitoIdentity": None,
            "principalOrgId": None,
            "userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{session}",
            "userId": f"AROAEXAMPLE:{session}",
        }
    }
    return event


def proxy_session(
    h: Handler, session: str, calls: list[tuple[str, dict[str, Any]]], role: str = "cairn-agents"
) -> list[Any]:
    """One proxy run: initialize, notifications/initialized, then each tools/call; their results."""
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcp-proxy-for-aws", "version": "1.1.0"}}  # fmt: skip
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    answer = h(proxy_event(session, initialize, role), CTX)
    assert answer["statusCode"] == 200, body_of(answer)
    assert json.loads(body_of(answer))["result"]["serverInfo"]["name"] == "cairn"
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert h(proxy_event(session, note, role), CTX)["statusCode"] == 202
    results = []
    for n, (tool, arguments) in enumerate(calls, start=1):
        call = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        answer = h(proxy_event(session, call, role), CTX)
        assert answer["statusCode"] == 200, body_of(answer)
        results.append(json.loads(body_of(answer))["result"])
    return results


CTX = LambdaContext()


def template_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **parameters: str) -> Handler:
    """The API function with the environment template.yaml gives it (its IAM tenants and scopes)."""
    for key, value in environments(**parameters)["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    return api_handler(lambda: fake_container(tmp_path))


AGENTS_ROLE = f"arn:aws:iam::{ACCOUNT}:role/cairn-agents"


def test_by_default_an_iam_caller_reads_and_writes_but_is_no_admin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Least privilege (template.yaml, IamScopes): anyone in the account who may invoke the IAM API
    would otherwise be a brains:admin (creating brains, minting API keys, reading the audit log)."""
    h = template_handler(tmp_path, monkeypatch)
    team = http_event("POST", "/v1/brains", body={"name": "Team", "visibility": "tenant"})  # an admin's JWT
    assert h(team, CTX)["statusCode"] == 201

    made, remembered = proxy_session(
        h,
        "botocore-session-1",
        [
            ("memory_create_brain", {"name": "Agent notes"}),
            ("memory_remember", {"content": "The kiln is hot.", "brain": "team"}),
        ],
    )
    keys = h(http_event("POST", "/v1/admin/keys", body={"name": "k", "scopes": ["documents:read"]},
                        iam=iam(ROLE)), CTX)  # fmt: skip

    assert made.get("isError") and "brains:admin" in json.dumps(made), made
    assert not remembered.get("isError"), remembered  # writes: into the tenant's first brain
    assert keys["statusCode"] == 403 and json_of(keys)["code"] == "forbidden"


def test_a_role_named_admin_creates_brains_and_others_of_the_account_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = template_handler(tmp_path, monkeypatch, IamAdminRoleArns=AGENTS_ROLE)

    (made,) = proxy_session(h, "botocore-session-1", [("memory_create_brain", {"name": "Agent notes"})])
    (other,) = proxy_session(h, "s2", [("memory_create_brain", {"name": "Mine"})], role="another-role")

    assert not made.get("isError"), made
    assert made["structuredContent"]["slug"] == "agent-notes"
    assert made["structuredContent"]["visibility"] == "private"
    assert other.get("isError") and "brains:admin" in json.dumps(other), other


def test_iam_scopes_can_still_make_every_caller_an_admin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = template_handler(tmp_path, monkeypatch, IamScopes="documents:read,documents:write,brains:admin")

    (made,) = proxy_session(h, "s1", [("memory_create_brain", {"name": "Ops"})], role="another-role")

    assert not made.get("isError"), made


def test_a_new_session_of_the_same_role_sees_its_private_brain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = template_handler(tmp_path, monkeypatch, IamAdminRoleArns=AGENTS_ROLE)
    proxy_session(h, "botocore-session-1", [("memory_create_brain", {"name": "Agent notes"})])

    (mine,) = proxy_session(h, "botocore-session-2", [("memory_list_brains", {})])
    (other_role,) = proxy_session(h, "s3", [("memory_list_brains", {})], role="another-role")

    assert [b["slug"] for b in mine["structuredContent"]["items"]] == ["agent-notes"]
    assert other_role["structuredContent"]["items"] == []  # private: the role's own


def test_narrower_iam_scopes_refuse_creating_a_brain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = template_handler(tmp_path, monkeypatch, IamScopes="documents:read")

    made, listed = proxy_session(
        h,
        "botocore-session-1",
        [("memory_create_brain", {"name": "Agent notes"}), ("memory_list_brains", {})],
    )

    assert made.get("isError") and "brains:admin" in json.dumps(made), made
    assert listed["structuredContent"]["items"] == []


MCP_PATHS = ["/mcp", "/mcp/admin"]
BASE = "https://abc123.execute-api.us-east-1.amazonaws.com"


@pytest.mark.parametrize("path", MCP_PATHS)
def test_every_mcp_path_names_its_metadata_and_the_authorization_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    h = template_handler(tmp_path, monkeypatch)
    suffixed = h(http_event("GET", f"/.well-known/oauth-protected-resource{path}", anonymous=True), CTX)
    bare = h(http_event("GET", "/.well-known/oauth-protected-resource", anonymous=True), CTX)
    refused = h(
        http_event("POST", path, body={"jsonrpc": "2.0", "id": 1, "method": "ping"}, anonymous=True), CTX
    )

    assert suffixed["statusCode"] == 200 and json_of(suffixed)["resource"] == f"{BASE}{path}"
    # with the template's Cognito settings Cairn is the authorization server in front of the pool
    # (its own metadata adds PKCE and registration: docs/AUTH.md, "Remote sign-in")
    assert json_of(suffixed)["authorization_servers"] == [BASE] == json_of(bare)["authorization_servers"]
    server = h(http_event("GET", "/.well-known/oauth-authorization-server", anonymous=True), CTX)
    metadata = json_of(server)
    assert metadata["issuer"] == BASE and metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["registration_endpoint"] == f"{BASE}/register"
    assert metadata["jwks_uri"].startswith(environments()["ApiFunction"]["CAIRN_JWT_ISSUER"])
    # Scopes as the Cognito resource server names them, so a client can ask for them verbatim.
    assert set(json_of(suffixed)["scopes_supported"]) == {
        "cairn/documents:read",
        "cairn/documents:write",
        "cairn/brains:admin",
    }
    challenge = refused["headers"]["www-authenticate"]
    assert refused["statusCode"] == 401
    assert challenge == f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource{path}"'


def test_a_refused_mcp_path_past_ascii_is_answered_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """API Gateway hands the function the decoded path; named in the challenge as it was, Mangum
    could not decode the response's header and the invocation failed (a 500 from the gateway)."""
    h = template_handler(tmp_path, monkeypatch)
    event = http_event(
        "POST", "/mcp/%C3%A9", body={"jsonrpc": "2.0", "id": 1, "method": "ping"}, anonymous=True
    )
    event["requestContext"]["http"]["path"] = "/mcp/\u00e9"

    refused = h(event, CTX)

    assert refused["statusCode"] == 401
    challenge = refused["headers"]["www-authenticate"]
    assert challenge == f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp/%C3%A9"'


# The MCP routes are open at the gateway (template.yaml): the function verifies Cognito's tokens
# itself, against the pool's JWKS (served here on loopback, keys made in the test).
@pytest.fixture(scope="module")
def pool_key() -> SigningKey:
    return rsa_key("cognito-2026")


@pytest.fixture
def cognito(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool_key: SigningKey
) -> Iterator[tuple[Handler, dict[str, str]]]:
    env = environments()["ApiFunction"]
    with jwks_server(jwks(pool_key)) as keys:
        monkeypatch.setenv("CAIRN_JWT_JWKS_URL", keys.url)
        yield template_handler(tmp_path, monkeypatch), env


def access_token(key: SigningKey, env: dict[str, str], client: str, **claims: Any) -> str:
    """What Cognito's token endpoint issues: an access token with client_id and no aud."""
    now = int(time.time())
    base = {"iss": env["CAIRN_JWT_ISSUER"], "client_id": client, "token_use": "access",
            "iat": now, "exp": now + 3600}  # fmt: skip
    return key.sign({**base, **claims})


def mcp_call(path: str, token: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": "2025-06-18",
    }
    return http_event("POST", path, body=json.dumps(message), headers=headers, anonymous=True)


def tool(h: Handler, path: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = h(mcp_call(path, token, "tools/call", {"name": name, "arguments": arguments}), CTX)
    assert answer["statusCode"] == 200, body_of(answer)
    result: dict[str, Any] = json.loads(body_of(answer))["result"]
    return result


USER_ASKS_ALL = "openid email cairn/documents:read cairn/documents:write cairn/brains:admin"


@pytest.mark.parametrize("path", MCP_PATHS)
def test_a_signed_in_user_gets_its_groups_scopes_on_every_mcp_path(
    cognito: tuple[Handler, dict[str, str]], pool_key: SigningKey, path: str
) -> None:
    h, env = cognito

    def user(name: str, *groups: str) -> str:
        return access_token(
            pool_key, env, "SignInClient", sub=f"u-{name}", username=name, scope=USER_ASKS_ALL,
            **{"cognito:groups": list(groups)},
        )  # fmt: skip

    reader, admin = user("bob", "documents:read"), user("al", "documents:read", "brains:admin")

    listed = h(mcp_call(path, reader, "tools/list", {}), CTX)
    assert listed["statusCode"] == 200 and json.loads(body_of(listed))["result"]["tools"]
    if path == "/mcp":
        denied = tool(h, path, reader, "memory_create_brain", {"name": "Ops"})
        made = tool(h, path, admin, "memory_create_brain", {"name": "Ops", "visibility": "tenant"})
        assert denied.get("isError") and "brains:admin" in json.dumps(denied)  # asked for it, not in a group
        assert not made.get("isError") and made["structuredContent"]["slug"] == "ops"
    else:
        tool(h, "/mcp", admin, "memory_create_brain", {"name": "Ops", "visibility": "tenant"})
        denied = tool(h, path, reader, "admin_update_brain", {"brain": "ops", "visibility": "private"})
        seen = tool(h, path, reader, "admin_list_brains", {})
        assert denied.get("isError") and "brains:admin" in json.dumps(denied)
        assert "ops" in json.dumps(seen["structuredContent"])


@pytest.mark.parametrize("path", MCP_PATHS)
def test_a_machine_client_acts_with_its_client_scopes_on_every_mcp_path(
    cognito: tuple[Handler, dict[str, str]], pool_key: SigningKey, path: str
) -> None:
    h, env = cognito
    machine = access_token(pool_key, env, "MachineClient", sub="MachineClient",
                           scope="cairn/documents:read cairn/documents:write")  # fmt: skip

    answer = h(mcp_call(path, machine, "tools/list", {}), CTX)
    names = {t["name"] for t in json.loads(body_of(answer))["result"]["tools"]}

    assert answer["statusCode"] == 200
    assert names and all(n.startswith("memory_" if path == "/mcp" else "admin_") for n in names)


@pytest.mark.parametrize("path", MCP_PATHS)
def test_tokens_of_other_clients_or_without_scopes_are_refused_on_every_mcp_path(
    cognito: tuple[Handler, dict[str, str]], pool_key: SigningKey, path: str
) -> None:
    h, env = cognito
    foreign = access_token(pool_key, env, "someone-elses-client", sub="x", scope="cairn/documents:read")
    impostor = rsa_key("cognito-2026")  # the pool's kid, another key
    forged = access_token(impostor, env, "MachineClient", sub="x", scope="cairn/documents:read")
    scopeless = access_token(pool_key, env, "SignInClient", sub="u-eve", username="eve", scope="openid email")
    metadata = f"{BASE}/.well-known/oauth-protected-resource{path}"

    for token in (foreign, forged):
        answer = h(mcp_call(path, token, "tools/list", {}), CTX)
        assert answer["statusCode"] == 401
        assert answer["headers"]["www-authenticate"] == (
            f'Bearer resource_metadata="{metadata}", error="invalid_token"'
        )
    answer = h(mcp_call(path, scopeless, "tools/list", {}), CTX)
    assert answer["statusCode"] == 403
    assert answer["headers"]["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="cairn/documents:read", resource_metadata="{metadata}"'
    )
