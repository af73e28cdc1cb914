"""Cairn's authorization-server documents, the registered clients the audience check accepts, and
the settings that switch remote sign-in on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.auth.errors import AuthError
from cairn.auth.jwt_verify import JwtVerifier
from cairn.auth.oauth.metadata import SignIn, openid_configuration, server_metadata
from cairn.auth.oauth.registered import RegisteredClient, RegisteredClients
from cairn.bootstrap.sign_in import sign_in_for
from cairn.config import Settings
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters
from tests.fakes.oauth_clients import MemoryOAuthClients
from tests.fakes.records import MemoryRecordStore
from tests.unit.auth.fakes import FakeClock as FakeMonotonic
from tests.unit.auth.fakes import FakeIssuer
from tests.unit.auth.tokens import AUDIENCE, ISSUER, NOW, SigningKey, claims, jwks

DOMAIN = "https://cairn-dev-123456789012.auth.us-east-1.amazoncognito.com"
POOL_ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf123"


def sign_in(registration: bool, **more: Any) -> SignIn:
    settings = Settings(
        data_dir=Path("/nonexistent-cairn"),
        jwt_issuer=POOL_ISSUER,
        jwt_audience=["static"],
        jwt_scope_prefix="cairn/",
        cognito_domain=DOMAIN + "/",
        cognito_user_pool_id="us-east-1_AbCdEf123",
        oauth_registration=registration,
        jwt_user_groups=True,
        **more,
    )
    adapters = fake_adapters()
    if registration:
        adapters.oauth_clients = MemoryOAuthClients()
    found = sign_in_for(settings, adapters)
    assert found is not None
    return found


def test_the_document_names_cognitos_endpoints_pkce_and_cairns_registration() -> None:
    document = server_metadata("https://api.example.test", sign_in(registration=True))
    assert document["issuer"] == "https://api.example.test"
    assert document["registration_endpoint"] == "https://api.example.test/register"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_endpoint"] == f"{DOMAIN}/oauth2/authorize"
    assert document["token_endpoint"] == f"{DOMAIN}/oauth2/token"
    assert document["revocation_endpoint"] == f"{DOMAIN}/oauth2/revoke"
    assert document["jwks_uri"] == f"{POOL_ISSUER}/.well-known/jwks.json"
    assert document["response_types_supported"] == ["code"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert "none" in document["token_endpoint_auth_methods_supported"]
    assert document["scopes_supported"] == [
        "openid",
        "email",
        "cairn/documents:read",
        "cairn/documents:write",
        "cairn/brains:admin",
    ]
    assert "offline_access" not in document["scopes_supported"]  # Cognito would refuse it


def test_the_document_names_no_credential_of_a_configured_jwks_url() -> None:
    jwks_url = "https://alice:s3cret@issuer.example.test/pool/.well-known/jwks.json?api_key=k3y"
    document = server_metadata("https://api.example.test", sign_in(registration=False, jwt_jwks_url=jwks_url))
    assert document["jwks_uri"] == "https://issuer.example.test/pool/.well-known/jwks.json"


def test_the_openid_form_adds_what_oidc_discovery_requires() -> None:
    document = openid_configuration("https://api.example.test", sign_in(registration=True))
    assert document["subject_types_supported"] == ["public"]
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    assert document["userinfo_endpoint"] == f"{DOMAIN}/oauth2/userInfo"
    assert document["code_challenge_methods_supported"] == ["S256"]


def test_without_registration_the_document_names_no_registration_endpoint() -> None:
    found = sign_in(registration=False)
    assert found.registration is None
    assert "registration_endpoint" not in server_metadata("https://api.example.test", found)


def test_sign_in_needs_both_the_issuer_and_the_sign_in_domain() -> None:
    base: dict[str, Any] = {"data_dir": Path("/nonexistent-cairn"), "jwt_audience": ["static"]}
    assert sign_in_for(Settings(**base, jwt_issuer=POOL_ISSUER), fake_adapters()) is None
    assert sign_in_for(Settings(**base, cognito_domain=DOMAIN), fake_adapters()) is None
    assert sign_in_for(Settings(**base, jwt_issuer=POOL_ISSUER, cognito_domain=""), fake_adapters()) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('["https://a.example/cb", "https://b.example/*"]', ["https://a.example/cb", "https://b.example/*"]),
        ("https://a.example/cb, https://b.example/*", ["https://a.example/cb", "https://b.example/*"]),
        ("", []),
        ('[""]', []),  # a template's empty CommaDelimitedList
    ],
)
def test_allowed_redirects_come_as_json_or_commas(
    raw: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_OAUTH_ALLOWED_REDIRECTS", raw)
    assert Settings(data_dir=Path("/nonexistent-cairn")).oauth_allowed_redirects == expected


def test_an_unsafe_operator_redirect_stops_the_start() -> None:
    settings = Settings(
        data_dir=Path("/nonexistent-cairn"),
        jwt_issuer=POOL_ISSUER,
        jwt_audience=["static"],
        cognito_domain=DOMAIN,
        cognito_user_pool_id="us-east-1_AbCdEf123",
        oauth_allowed_redirects=["https://example.com*"],
        jwt_user_groups=True,
    )
    adapters = fake_adapters()
    adapters.oauth_clients = MemoryOAuthClients()
    with pytest.raises(ValueError, match="must reach into the path"):
        sign_in_for(settings, adapters)


def test_an_access_token_of_a_registered_client_is_meant_for_cairn(rsa1: SigningKey) -> None:
    records, clock = MemoryRecordStore(), FakeClock()
    registered = RegisteredClients(records, clock)
    registered.add(
        RegisteredClient(
            client_id="dyn123", redirect_uris=["http://127.0.0.1:1/cb"], scopes=[], created_at=clock.now()
        )
    )
    verify = JwtVerifier(
        FakeIssuer(jwks(rsa1)).cache(FakeMonotonic()),
        issuer=ISSUER,
        audiences=[AUDIENCE],
        clock=lambda: NOW,
        known_client=registered.knows,
    )
    access: dict[str, Any] = {"aud": None, "token_use": "access", "client_id": "dyn123", "username": "alice"}
    assert verify.verify(rsa1.sign(claims(**access)))["client_id"] == "dyn123"
    with pytest.raises(AuthError, match="client_id"):
        verify.verify(rsa1.sign(claims(**{**access, "client_id": "stranger"})))
    # An ID token names its client in aud: the registered clients do not widen that check.
    with pytest.raises(AuthError, match="aud"):
        verify.verify(rsa1.sign(claims(aud="dyn123", token_use="id")))
    registered.mark_revoked("dyn123")
    with pytest.raises(AuthError, match="client_id"):
        verify.verify(rsa1.sign(claims(**access)))


def test_registration_without_user_groups_stops_the_start() -> None:
    settings = Settings(
        data_dir=Path("/nonexistent-cairn"),
        jwt_issuer=POOL_ISSUER,
        jwt_audience=["static"],
        cognito_domain=DOMAIN,
        cognito_user_pool_id="us-east-1_AbCdEf123",
    )
    adapters = fake_adapters()
    adapters.oauth_clients = MemoryOAuthClients()
    with pytest.raises(ValueError, match="needs CAIRN_JWT_USER_GROUPS=true"):
        sign_in_for(settings, adapters)
    without = sign_in_for(settings.model_copy(update={"oauth_registration": False}), adapters)
    assert without is not None and without.registration is None
