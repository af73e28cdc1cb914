"""Claims and API Gateway request contexts to Principals: subject, tenant, scopes, IAM mapping."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from cairn.auth import access
from cairn.auth.claims import (
    principal_from_apigw,
    principal_from_claims,
    principal_from_iam,
    scopes_from_claims,
)
from cairn.auth.errors import FORBIDDEN, INVALID_TOKEN, AuthError
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.domain.models import Brain, Visibility
from tests.events.apigw import http_event

ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/CairnWriter"
SESSION_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/CairnWriter/build-42"


def test_subject_tenant_and_scopes_from_plain_claims() -> None:
    principal = principal_from_claims({"sub": "u1", "tenant": "acme", "scope": "documents:read openid"})
    assert principal == Principal("acme", "u1", frozenset({READ}), Via.jwt)


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"scope": "documents:read documents:write brains:admin"}, {READ, WRITE, ADMIN}),
        ({"scope": "  documents:read   profile "}, {READ}),
        ({"scp": ["documents:write", "email"]}, {WRITE}),
        ({"scp": "documents:read documents:write"}, {READ, WRITE}),
        ({"cognito:groups": ["brains:admin", "staff"]}, {ADMIN}),
        ({"cognito:groups": "[documents:read staff]"}, {READ}),  # how API Gateway passes a list claim
        ({"cognito:groups": '["documents:write"]'}, {WRITE}),
        ({"cognito:groups": "documents:read,documents:write"}, {READ, WRITE}),
        ({"scope": "documents:read", "cognito:groups": ["documents:write"]}, {READ, WRITE}),
        ({"scope": "DOCUMENTS:READ documents:readx admin"}, set()),
        ({"scope": 7, "scp": {"documents:read": True}, "cognito:groups": [1, None]}, set()),
        ({}, set()),
    ],
)
def test_scopes_keep_only_known_names(claims: dict[str, Any], expected: set[str]) -> None:
    assert scopes_from_claims(claims) == expected


def test_a_scope_prefix_is_stripped_for_cognito_resource_servers() -> None:
    claims = {"scope": "cairn/documents:read cairn/brains:admin other/documents:write"}
    assert scopes_from_claims(claims, scope_prefix="cairn/") == {READ, ADMIN}
    assert scopes_from_claims(claims) == set()


def test_the_tenant_claim_is_configurable_and_a_plain_key() -> None:
    claims = {"sub": "u1", "custom:tenant": "globex", "custom": {"tenant": "nested"}}
    assert principal_from_claims(claims, tenant_claim="custom:tenant").tenant == "globex"
    with pytest.raises(AuthError):
        principal_from_claims(claims, tenant_claim="custom.tenant")


def test_a_missing_tenant_falls_back_to_the_default() -> None:
    assert principal_from_claims({"sub": "u1"}, default_tenant="local").tenant == "local"
    assert principal_from_claims({"sub": "u1", "tenant": None}, default_tenant="local").tenant == "local"
    assert principal_from_claims({"sub": "u1", "tenant": "acme"}, default_tenant="local").tenant == "acme"


@pytest.mark.parametrize(
    "claims",
    [
        {"tenant": "acme"},
        {"sub": "", "tenant": "acme"},
        {"sub": 42, "tenant": "acme"},
        {"sub": "u1"},
        {"sub": "u1", "tenant": ""},
        {"sub": "u1", "tenant": ["acme"]},
        {"sub": "u1", "tenant": "x" * 129},
    ],
)
def test_claims_without_a_usable_subject_or_tenant_are_refused(claims: dict[str, Any]) -> None:
    with pytest.raises(AuthError) as caught:
        principal_from_claims(claims)
    assert caught.value.code == INVALID_TOKEN


def test_an_api_gateway_jwt_event_becomes_a_jwt_principal() -> None:
    # API Gateway passes every claim as a string, list claims as "[a b]"
    claims = {
        "sub": "8f1c-user",
        "custom:tenant": "acme",
        "cognito:groups": "[documents:read documents:write admins]",
        "scope": "aws.cognito.signin.user.admin",
        "exp": "1800000300",
    }
    event = http_event("GET", "/v1/brains", claims=claims)
    principal = principal_from_apigw(event, tenant_claim="custom:tenant")
    assert principal == Principal("acme", "8f1c-user", frozenset({READ, WRITE}), Via.jwt)


IAM_TENANTS = {
    ACCOUNT: "acme",
    ROLE_ARN: "acme-builds",
    f"arn:aws:iam::{ACCOUNT}:user/": "acme-people",
    "210987654321": "globex",
}
IAM_SCOPES = {"*": [READ], ROLE_ARN: [READ, WRITE, "s3:GetObject"]}


def iam_identity(
    user_arn: str, account: str = ACCOUNT, caller_id: str = "AROAEXAMPLE:build-42"
) -> dict[str, Any]:
    return {
        "accessKey": "ASIAEXAMPLE",
        "accountId": account,
        "callerId": caller_id,
        "cognitoIdentity": None,
        "principalOrgId": "o-abc123",
        "userArn": user_arn,
        "userId": caller_id,
    }


@pytest.mark.parametrize(
    ("user_arn", "account", "tenant", "scopes", "subject"),
    [
        # the assumed role's ARN is the longest key, and the subject (not the session)
        (SESSION_ARN, ACCOUNT, "acme-builds", {READ, WRITE}, ROLE_ARN),
        (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/CairnWriterOld/s",
            ACCOUNT,
            "acme",
            {READ},
            f"arn:aws:iam::{ACCOUNT}:role/CairnWriterOld",
        ),  # no /Dev ~ /DevOps
        (f"arn:aws:iam::{ACCOUNT}:user/alice", ACCOUNT, "acme-people", {READ}, None),
        (f"arn:aws:iam::{ACCOUNT}:root", ACCOUNT, "acme", {READ}, None),
        ("arn:aws:iam::210987654321:user/bob", "210987654321", "globex", {READ}, None),
        (f"arn:aws:sts::{ACCOUNT}:federated-user/carol", ACCOUNT, "acme", {READ}, None),
    ],
)
def test_iam_callers_map_by_the_longest_matching_key(
    user_arn: str, account: str, tenant: str, scopes: set[str], subject: str | None
) -> None:
    event = http_event("POST", "/v1/brains", iam=iam_identity(user_arn, account))
    principal = principal_from_apigw(event, iam_tenants=IAM_TENANTS, iam_scopes=IAM_SCOPES)
    assert principal == Principal(tenant, subject or user_arn, frozenset(scopes), Via.iam)


def test_every_session_of_a_role_is_the_same_subject() -> None:
    sessions = [
        iam_identity(
            f"arn:aws:sts::{ACCOUNT}:assumed-role/CairnWriter/{name}", caller_id=f"AROAEXAMPLE:{name}"
        )
        for name in ("build-42", "botocore-session-1712345678")
    ]
    first, second = (principal_from_iam(i, tenants=IAM_TENANTS, scopes=IAM_SCOPES) for i in sessions)
    assert first.subject == second.subject == ROLE_ARN
    # A role with a path: the assumed-role ARN drops it, and so does the subject.
    pathed = iam_identity(f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/agents/s1")
    assert principal_from_iam(pathed, tenants=IAM_TENANTS, scopes={}).subject == (
        f"arn:aws-cn:iam::{ACCOUNT}:role/agents"
    )


def test_a_caller_id_prefix_maps_too() -> None:
    identity = iam_identity("arn:aws:sts::999999999999:assumed-role/X/s", account="999999999999")
    principal = principal_from_iam(identity, tenants={"AROAEXAMPLE": "initech"}, scopes={})
    assert (principal.tenant, principal.scopes) == ("initech", frozenset())


def brain_owned_by(owner: str) -> Brain:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    return Brain(
        id="brn_1", slug="builds", name="Builds", owner_tenant="acme", owner=owner, embedding_model="m",
        embedding_dim=4, visibility=Visibility.private, created_at=moment, updated_at=moment,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("caller_id", "subject"), [("AIDAEXAMPLE", "aws:AIDAEXAMPLE"), ("", f"aws:{ACCOUNT}")]
)
def test_a_caller_without_an_arn_is_named_in_the_aws_namespace(caller_id: str, subject: str) -> None:
    """Not its bare caller id or account: a token whose `sub` is that string would own its brains."""
    identity = {**iam_identity("", caller_id=caller_id), "userArn": None}
    principal = principal_from_iam(identity, tenants=IAM_TENANTS, scopes={})
    assert (principal.tenant, principal.subject) == ("acme", subject)
    assert not access.owns(replace(principal, via=Via.jwt), brain_owned_by(subject))
    assert access.owns(principal, brain_owned_by(subject))


def test_an_unmapped_iam_caller_is_forbidden() -> None:
    event = http_event(
        "GET", "/v1/brains", iam=iam_identity("arn:aws:iam::555555555555:user/eve", "555555555555")
    )
    with pytest.raises(AuthError) as caught:
        principal_from_apigw(event, iam_tenants=IAM_TENANTS, iam_scopes=IAM_SCOPES)
    assert caught.value.code == FORBIDDEN
    with pytest.raises(AuthError):
        principal_from_apigw(event)  # no mapping configured at all


def test_an_account_id_matches_only_exactly() -> None:
    identity = iam_identity("arn:aws:iam::123456789012:user/a", account="123456789012")
    with pytest.raises(AuthError):
        principal_from_iam(identity, tenants={"1234": "prefix-of-account"}, scopes={})


def test_the_wildcard_key_maps_every_caller_and_loses_to_any_other() -> None:
    tenants = {"*": "everyone", ROLE_ARN: "builds"}
    assert principal_from_iam(iam_identity(SESSION_ARN), tenants=tenants, scopes={}).tenant == "builds"
    other = iam_identity("arn:aws:iam::555555555555:user/eve", "555555555555")
    assert principal_from_iam(other, tenants=tenants, scopes={}).tenant == "everyone"


def test_an_event_without_an_authorizer_has_no_principal() -> None:
    assert principal_from_apigw(http_event("GET", "/v1/brains", anonymous=True)) is None
    assert principal_from_apigw({"requestContext": {"authorizer": {"lambda": {"x": 1}}}}) is None
    assert principal_from_apigw({}) is None


ALL_ASKED = "openid email cairn/documents:read cairn/documents:write cairn/brains:admin"


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        # A user asking the sign-in client for everything gets only what its groups grant.
        ({"username": "bob", "scope": ALL_ASKED, "cognito:groups": ["documents:read"]}, {READ}),
        ({"username": "bob", "scope": ALL_ASKED}, set()),
        # A user may ask for less than its groups grant, never more.
        (
            {
                "username": "al",
                "scope": "openid cairn/documents:read",
                "cognito:groups": [READ, WRITE, ADMIN],
            },
            {READ},
        ),
        ({"username": "al", "scope": "openid email", "cognito:groups": [READ, WRITE]}, {READ, WRITE}),
        # An ID token names its user as cognito:username.
        ({"cognito:username": "al", "cognito:groups": "[documents:read brains:admin]"}, {READ, ADMIN}),
        # A machine token (client credentials) keeps the scopes its client was allowed.
        ({"scope": "cairn/documents:read cairn/documents:write"}, {READ, WRITE}),
        ({"scope": "cairn/documents:read", "cognito:groups": [ADMIN]}, {READ}),
    ],
)
def test_with_user_groups_a_user_never_gets_more_than_its_groups(
    claims: dict[str, Any], expected: set[str]
) -> None:
    assert scopes_from_claims(claims, scope_prefix="cairn/", user_groups=True) == expected


def test_without_user_groups_scopes_are_the_union_as_before() -> None:
    claims = {"username": "bob", "scope": ALL_ASKED, "cognito:groups": ["documents:read"]}
    assert scopes_from_claims(claims, scope_prefix="cairn/") == {READ, WRITE, ADMIN}


def test_a_libs_claim_limits_the_token_to_those_libraries() -> None:
    base = {"sub": "u1", "tenant": "acme", "scope": "documents:read"}
    assert principal_from_claims(base).brains is None  # no claim: the tenant's rules alone
    assert principal_from_claims({**base, "libs": ["brn_a", "brn_b"]}).brains == frozenset({"brn_a", "brn_b"})
    assert principal_from_claims({**base, "libs": []}).brains == frozenset()  # reads nothing
    for bad in ("brn_a", [1], [""], None):
        with pytest.raises(AuthError, match="libs"):
            principal_from_claims({**base, "libs": bad})
