"""Remote sign-in from Settings: the user pool's app-client port and Cairn's authorization-server
pieces (auth/oauth/), present only when a JWT issuer and its Cognito sign-in domain are configured."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from cairn.auth.oauth.metadata import SignIn, SignInEndpoints
from cairn.auth.oauth.redirects import RedirectPolicy
from cairn.auth.oauth.registered import RegisteredClients
from cairn.auth.oauth.registration import ClientRegistration
from cairn.auth.oauth.throttle import RegistrationThrottle
from cairn.auth.principal import SCOPES
from cairn.config import Settings
from cairn.container import Adapters
from cairn.ports.oauth_clients import OAuthClients

_POOL_REGION = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d)_")


def oauth_clients_for(settings: Settings) -> OAuthClients | None:
    """Cognito app clients in the configured pool, or None when registration is off."""
    pool = settings.cognito_user_pool_id
    if not pool or not settings.oauth_registration:
        return None
    from cairn.adapters.aws.cognito_clients import CognitoAppClients

    match = _POOL_REGION.match(pool)
    region = match.group(1) if match else settings.aws_region

    def client() -> Any:
        import boto3
        from botocore.config import Config

        config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10)
        return boto3.client(
            "cognito-idp", region_name=region, endpoint_url=settings.aws_endpoint_url or None, config=config
        )

    return CognitoAppClients(client, pool)


def sign_in_scopes(settings: Settings) -> list[str]:
    """What a registered client may ask for: OpenID's basics and Cairn's scopes as the pool names them."""
    return ["openid", "email", *(f"{settings.jwt_scope_prefix or ''}{scope}" for scope in SCOPES)]


def sign_in_for(settings: Settings, adapters: Adapters) -> SignIn | None:
    if not (settings.jwt_issuer and settings.cognito_domain):
        return None
    scopes = sign_in_scopes(settings)
    jwks = settings.jwt_jwks_url or settings.jwt_issuer.rstrip("/") + "/.well-known/jwks.json"
    registered = RegisteredClients(adapters.records, adapters.clock)
    registration = None
    if adapters.oauth_clients is not None and settings.oauth_registration:
        if not settings.jwt_user_groups:
            # a registered client may ask for every Cairn scope and Cognito grants what it asks:
            # only the user's groups bound what a signed-in user can do
            raise ValueError(
                "client registration (CAIRN_COGNITO_USER_POOL_ID) needs CAIRN_JWT_USER_GROUPS=true: "
                "without it any user of the pool could register a client and ask for brains:admin. "
                "Set it (users then get their groups' scopes), or CAIRN_OAUTH_REGISTRATION=false"
            )
        registration = ClientRegistration(
            adapters.oauth_clients,
            registered,
            RedirectPolicy(settings.oauth_allowed_redirects),
            RegistrationThrottle(adapters.records, adapters.clock, settings.oauth_registrations_per_hour),
            adapters.clock,
            scopes=scopes,
            max_clients=settings.oauth_max_clients,
            unused_after=timedelta(hours=settings.oauth_unused_client_hours) or None,
        )
    endpoints = SignInEndpoints.cognito(settings.cognito_domain, jwks, scopes)
    return SignIn(endpoints, registered, registration)
