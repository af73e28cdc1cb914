"""The Cognito adapter of OAuthClients, under moto's cognito-idp (the app client it makes) and
botocore's Stubber (how it passes on Cognito's refusals and failures)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cairn.adapters.aws.cognito_clients import CognitoAppClients
from cairn.domain.errors import Unavailable
from cairn.ports.oauth_clients import ClientRefused, ClientRequest
from tests.contract.aws_storage import REGION, fake_credentials

SCOPES = ["openid", "email", "cairn/documents:read"]


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    fake_credentials(monkeypatch)
    with mock_aws():
        client = boto3.client("cognito-idp", region_name=REGION)
        yield client, client.create_user_pool(PoolName="p")["UserPool"]["Id"]


def test_a_public_client_for_exactly_the_uris_given(pool: tuple[Any, str]) -> None:
    client, pool_id = pool
    made = CognitoAppClients(lambda: client, pool_id).create(
        ClientRequest("mcp-dcr Claude Code", ["http://localhost:41234/callback"], SCOPES)
    )
    assert made.client_secret is None
    found = client.describe_user_pool_client(UserPoolId=pool_id, ClientId=made.client_id)["UserPoolClient"]
    assert found["CallbackURLs"] == ["http://localhost:41234/callback"]
    assert found["AllowedOAuthFlows"] == ["code"] and found["AllowedOAuthFlowsUserPoolClient"]
    assert found["AllowedOAuthScopes"] == SCOPES and found["SupportedIdentityProviders"] == ["COGNITO"]
    assert "ClientSecret" not in found and found["ClientName"] == "mcp-dcr Claude Code"


def test_a_confidential_client_gets_cognitos_secret_and_delete_is_idempotent(pool: tuple[Any, str]) -> None:
    client, pool_id = pool
    clients = CognitoAppClients(lambda: client, pool_id)
    made = clients.create(ClientRequest("c", ["https://claude.ai/api/mcp/auth_callback"], SCOPES, True))
    found = client.describe_user_pool_client(UserPoolId=pool_id, ClientId=made.client_id)["UserPoolClient"]
    assert made.client_secret is not None and made.client_secret == found["ClientSecret"]
    assert made.client_secret not in repr(made)
    clients.delete(made.client_id)
    clients.delete(made.client_id)
    assert client.list_user_pool_clients(UserPoolId=pool_id, MaxResults=10)["UserPoolClients"] == []


def test_the_client_is_made_on_first_use() -> None:
    made: list[int] = []
    CognitoAppClients(lambda: made.append(1), "us-east-1_x")
    assert made == []


@pytest.mark.parametrize(
    ("code", "raised", "message"),
    [
        ("InvalidParameterException", ClientRefused, "callback URL must be HTTPS"),
        ("ScopeDoesNotExistException", ClientRefused, "the user pool refused"),
        ("LimitExceededException", Unavailable, "quota"),
        ("TooManyRequestsException", Unavailable, "try again later"),
        ("InternalErrorException", Unavailable, "try again later"),
    ],
)
def test_cognitos_refusals_and_failures(
    code: str, raised: type[Exception], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_credentials(monkeypatch)
    client = boto3.client("cognito-idp", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_client_error("create_user_pool_client", code, "callback URL must be HTTPS")
        with pytest.raises(raised, match=message):
            CognitoAppClients(lambda: client, "us-east-1_x").create(
                ClientRequest("n", ["http://x/cb"], SCOPES)
            )
