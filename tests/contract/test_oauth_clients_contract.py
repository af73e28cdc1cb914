"""OAuthClients contract: the in-memory fake and the Cognito adapter (under moto) make distinct
clients, give a secret exactly to a confidential one, and delete idempotently."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.cognito_clients import CognitoAppClients
from cairn.ports.oauth_clients import ClientRequest, OAuthClients
from tests.contract.aws_storage import REGION, fake_credentials
from tests.fakes.oauth_clients import MemoryOAuthClients

SCOPES = ["openid", "cairn/documents:read"]


@pytest.fixture(params=["fake", "cognito"])
def clients(request: pytest.FixtureRequest) -> Iterator[OAuthClients]:
    if request.param == "fake":
        yield MemoryOAuthClients()
        return
    fake_credentials(request.getfixturevalue("monkeypatch"))
    with mock_aws():
        client = boto3.client("cognito-idp", region_name=REGION)
        pool = client.create_user_pool(PoolName="contract")["UserPool"]["Id"]
        yield CognitoAppClients(lambda: client, pool)


def test_each_client_is_new_and_only_a_confidential_one_has_a_secret(clients: OAuthClients) -> None:
    public = clients.create(ClientRequest("a", ["http://127.0.0.1:5000/cb"], SCOPES))
    other = clients.create(ClientRequest("a", ["http://127.0.0.1:5000/cb"], SCOPES))
    hosted = ["https://claude.ai/api/mcp/auth_callback"]
    confidential = clients.create(ClientRequest("b", hosted, SCOPES, confidential=True))
    assert len({public.client_id, other.client_id, confidential.client_id}) == 3
    assert public.client_secret is None and confidential.client_secret
    assert confidential.client_secret not in repr(confidential)


def test_delete_is_idempotent(clients: OAuthClients) -> None:
    made = clients.create(ClientRequest("a", ["http://127.0.0.1:5000/cb"], SCOPES))
    clients.delete(made.client_id)
    clients.delete(made.client_id)
    clients.delete("never-made")
