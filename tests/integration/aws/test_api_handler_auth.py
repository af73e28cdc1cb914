"""Principals arriving through API Gateway HTTP API v2 events into the API function: JWT claims the
authorizer verified, SigV4 (IAM) identities mapped to tenants, and events with no authorizer."""

from __future__ import annotations

from pathlib import Path

from cairn.entrypoints.aws_lambda import Handler, api_handler
from tests.events.apigw import LambdaContext, http_event, json_of
from tests.fakes.container import fake_container

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
    assert other["statusCode"] == 403 and "Team" not in json_of(other)["detail"]
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
    assert partner["statusCode"] == 403  # another tenant's brain
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
