"""A Cognito user pool's control plane on moto's HTTP server (127.0.0.1, a free port): the pool
template.yaml makes (the `cairn` resource server with Cairn's scopes, a static sign-in client), and
the app clients Cairn's registration creates in it through boto3, as on AWS."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from cairn.auth.principal import SCOPES
from tests.contract.aws_storage import REGION
from tests.support.moto_server import moto_endpoint

SIGN_IN_SCOPES = ["openid", "email", *(f"cairn/{scope}" for scope in SCOPES)]


@dataclass
class CognitoPool:
    endpoint: str  # moto's URL (CAIRN_AWS_ENDPOINT_URL)
    pool_id: str
    client: Any  # boto3 cognito-idp on moto
    static_client_id: str  # the template's sign-in client: what CAIRN_JWT_AUDIENCE names

    def app_client(self, client_id: str) -> dict[str, Any] | None:
        """The app client as DescribeUserPoolClient answers it (callbacks, flows, scopes, secret)."""
        try:
            found: dict[str, Any] = self.client.describe_user_pool_client(
                UserPoolId=self.pool_id, ClientId=client_id
            )["UserPoolClient"]
        except ClientError:
            return None
        return found

    def client_ids(self) -> list[str]:
        listed = self.client.list_user_pool_clients(UserPoolId=self.pool_id, MaxResults=60)
        return [c["ClientId"] for c in listed["UserPoolClients"]]


@contextmanager
def cognito_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[CognitoPool]:
    with moto_endpoint(monkeypatch) as endpoint:
        client = boto3.client("cognito-idp", region_name=REGION, endpoint_url=endpoint)
        pool_id = client.create_user_pool(PoolName="cairn-test")["UserPool"]["Id"]
        client.create_resource_server(
            UserPoolId=pool_id,
            Identifier="cairn",
            Name="cairn",
            Scopes=[{"ScopeName": s, "ScopeDescription": s} for s in SCOPES],
        )
        static = client.create_user_pool_client(
            UserPoolId=pool_id,
            ClientName="cairn-test-mcp-sign-in",
            GenerateSecret=False,
            AllowedOAuthFlowsUserPoolClient=True,
            AllowedOAuthFlows=["code"],
            AllowedOAuthScopes=SIGN_IN_SCOPES,
            CallbackURLs=["http://localhost:6274/oauth/callback"],
            SupportedIdentityProviders=["COGNITO"],
        )["UserPoolClient"]["ClientId"]
        yield CognitoPool(endpoint, pool_id, client, static)
