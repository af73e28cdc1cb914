"""JWTs verified end to end against a JWKS served over HTTP on 127.0.0.1 (keys made in the test)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from cairn.auth.claims import principal_from_claims
from cairn.auth.errors import INVALID_TOKEN, UNAVAILABLE, AuthError
from cairn.auth.jwks import JwksCache
from cairn.auth.jwt_verify import JwtVerifier
from cairn.auth.principal import READ, WRITE, Via
from tests.integration.auth.jwks_server import JwksServer, jwks_server
from tests.unit.auth.fakes import FakeClock
from tests.unit.auth.tokens import (
    AUDIENCE,
    ISSUER,
    NOW,
    SigningKey,
    claims,
    ec_key,
    hs256_with,
    jwks,
    rsa_key,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def old() -> SigningKey:
    return rsa_key("2026-01")


@pytest.fixture(scope="module")
def new() -> SigningKey:
    return ec_key("2026-02")


@pytest.fixture
def server(old: SigningKey) -> Iterator[JwksServer]:
    with jwks_server(jwks(old)) as running:
        yield running


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def verifier_for(url: str, http: httpx.Client, clock: FakeClock) -> JwtVerifier:
    cache = JwksCache(url, http, clock=clock, timeout_s=2.0)
    return JwtVerifier(cache, issuer=ISSUER, audiences=[AUDIENCE], clock=lambda: NOW)


def test_a_good_token_becomes_a_principal(
    server: JwksServer, http: httpx.Client, clock: FakeClock, old: SigningKey
) -> None:
    verified = verifier_for(server.url, http, clock).verify(old.sign(claims()))
    principal = principal_from_claims(verified)
    assert (principal.tenant, principal.subject, principal.via) == ("acme", "user-1", Via.jwt)
    assert principal.scopes == {READ, WRITE}
    assert server.requests == 1


def test_key_rotation_is_picked_up_by_one_refresh(
    server: JwksServer, http: httpx.Client, clock: FakeClock, old: SigningKey, new: SigningKey
) -> None:
    # Given a verifier that has cached the old key
    verify = verifier_for(server.url, http, clock)
    verify.verify(old.sign(claims()))
    # When the issuer publishes a new key and a token signed with it arrives
    server.document = jwks(old, new)
    clock.advance(31)
    # Then one refresh finds it, and the old key's tokens still pass
    assert verify.verify(new.sign(claims(sub="user-2")))["sub"] == "user-2"
    assert verify.verify(old.sign(claims()))["sub"] == "user-1"
    assert server.requests == 2


def test_unknown_kids_twice_in_quick_succession_fetch_once(
    server: JwksServer, http: httpx.Client, clock: FakeClock, old: SigningKey
) -> None:
    verify = verifier_for(server.url, http, clock)
    stranger = rsa_key("random-kid")
    for _ in range(2):
        with pytest.raises(AuthError) as caught:
            verify.verify(stranger.sign(claims()))
        assert caught.value.code == INVALID_TOKEN
    assert server.requests == 1  # the first fetch loaded the cache; the second unknown kid was throttled


def test_a_failing_issuer_keeps_the_old_keys(
    server: JwksServer, http: httpx.Client, clock: FakeClock, old: SigningKey, new: SigningKey
) -> None:
    verify = verifier_for(server.url, http, clock)
    verify.verify(old.sign(claims()))
    server.status = 500
    clock.advance(601)  # the keys are stale: the next lookup refreshes, and the refresh fails
    assert verify.verify(old.sign(claims()))["sub"] == "user-1"
    assert server.requests == 2
    server.stop()  # now the issuer is gone entirely
    clock.advance(31)
    with pytest.raises(AuthError) as caught:
        verify.verify(new.sign(claims()))  # unknown kid: a refresh is tried, fails, the kid stays unknown
    assert caught.value.code == INVALID_TOKEN
    assert verify.verify(old.sign(claims()))["sub"] == "user-1"


def test_no_issuer_and_no_cached_keys_is_unavailable(
    http: httpx.Client, clock: FakeClock, old: SigningKey
) -> None:
    with jwks_server(jwks(old)) as gone:
        url = gone.url
    with pytest.raises(AuthError) as caught:
        verifier_for(url, http, clock).verify(old.sign(claims()))
    assert caught.value.code == UNAVAILABLE
    assert "127.0.0.1" in caught.value.reason


def test_hs256_signed_with_the_served_public_key_is_refused(
    server: JwksServer, http: httpx.Client, clock: FakeClock, old: SigningKey
) -> None:
    token = hs256_with(old.public_pem(), claims(), kid=old.kid)
    with pytest.raises(AuthError) as caught:
        verifier_for(server.url, http, clock).verify(token)
    assert token not in str(caught.value)
