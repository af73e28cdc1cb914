"""OAuthClients on a Cognito user pool: one app client per registration (ports/oauth_clients.py).

Each client may use the authorization code flow only (PKCE; Cognito checks a `code_challenge`
whenever the client sends one), with the pool's own users (`COGNITO`), the scopes it is given and
exactly the callback URLs it is given: Cognito matches `redirect_uri` against them exactly. A
confidential client gets a secret from Cognito, passed back once and never logged.

The boto3 client is made on first use, so a function that never registers a client never pays for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cairn.domain.errors import Unavailable
from cairn.ports.oauth_clients import ClientRefused, ClientRequest, IssuedClient

log = logging.getLogger("cairn.auth")

REFUSALS = {"InvalidParameterException", "InvalidOAuthFlowException", "ScopeDoesNotExistException"}
FULL = "LimitExceededException"
MISSING = "ResourceNotFoundException"
MAX_REASON = 300


class CognitoAppClients:
    def __init__(self, client_factory: Callable[[], Any], user_pool_id: str) -> None:
        self._factory = client_factory
        self._client: Any = None
        self.user_pool_id = user_pool_id

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._factory()
        return self._client

    def create(self, request: ClientRequest) -> IssuedClient:
        try:
            made = self.client.create_user_pool_client(
                UserPoolId=self.user_pool_id,
                ClientName=request.name,
                GenerateSecret=request.confidential,
                AllowedOAuthFlowsUserPoolClient=True,
                AllowedOAuthFlows=["code"],
                AllowedOAuthScopes=list(request.scopes),
                CallbackURLs=list(request.redirect_uris),
                SupportedIdentityProviders=["COGNITO"],
                ExplicitAuthFlows=["ALLOW_REFRESH_TOKEN_AUTH"],
                PreventUserExistenceErrors="ENABLED",
                EnableTokenRevocation=True,
            )["UserPoolClient"]
        except ClientError as exc:
            raise _failure(exc, "CreateUserPoolClient") from None
        except BotoCoreError as exc:
            log.warning("CreateUserPoolClient failed: %s", type(exc).__name__)
            raise Unavailable("the user pool could not be reached: try again later") from None
        return IssuedClient(made["ClientId"], made.get("ClientSecret"))

    def delete(self, client_id: str) -> None:
        try:
            self.client.delete_user_pool_client(UserPoolId=self.user_pool_id, ClientId=client_id)
        except ClientError as exc:
            if _code(exc) == MISSING:
                return
            raise _failure(exc, "DeleteUserPoolClient") from None
        except BotoCoreError as exc:
            log.warning("DeleteUserPoolClient failed: %s", type(exc).__name__)
            raise Unavailable("the user pool could not be reached: try again later") from None


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _failure(exc: ClientError, operation: str) -> Exception:
    code = _code(exc)
    reason = str(exc.response.get("Error", {}).get("Message", ""))[:MAX_REASON]
    if code in REFUSALS:
        return ClientRefused(f"the user pool refused the client: {reason or code}")
    if code == FULL:
        return Unavailable(
            "the user pool holds as many app clients as its quota allows: the operator must revoke "
            "unused registrations (or raise the quota)",
            retry_after_s=3600,
        )
    log.warning("%s failed: %s", operation, code)
    return Unavailable("the user pool could not be reached: try again later", retry_after_s=5)
