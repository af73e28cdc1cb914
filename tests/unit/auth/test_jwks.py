"""JwksCache: caching by kid, one refresh on an unknown kid, throttling, keeping keys on failure."""

from __future__ import annotations

import threading
import traceback
from typing import Any

import httpx
import pytest

from cairn.auth.errors import INVALID_TOKEN, UNAVAILABLE, AuthError
from cairn.auth.jwks import JwksCache, parse_jwks, redact
from tests.unit.auth.fakes import FakeClock, FakeIssuer
from tests.unit.auth.tokens import SigningKey, jwks


def test_keys_are_fetched_once_and_served_from_the_cache(rsa1: SigningKey, clock: FakeClock) -> None:
    issuer = FakeIssuer(jwks(rsa1))
    cache = issuer.cache(clock)
    first = cache.key_for("rsa-1")
    clock.advance(599)
    assert cache.key_for("rsa-1") is first
    assert issuer.requests == 1
    assert first.key_id == "rsa-1" and first.algorithm_name == "RS256"


def test_an_unknown_kid_refreshes_once_and_finds_the_rotated_key(
    rsa1: SigningKey, rsa2: SigningKey, clock: FakeClock
) -> None:
    # Given a cache holding the old key, and an issuer that has since rotated to a new one
    issuer = FakeIssuer(jwks(rsa1))
    cache = issuer.cache(clock)
    cache.key_for("rsa-1")
    issuer.document = jwks(rsa1, rsa2)
    clock.advance(31)
    # When a token names the new kid / Then one refresh finds it
    assert cache.key_for("rsa-2").key_id == "rsa-2"
    assert issuer.requests == 2


def test_unknown_kids_in_quick_succession_cost_one_fetch(rsa1: SigningKey, clock: FakeClock) -> None:
    issuer = FakeIssuer(jwks(rsa1))
    cache = issuer.cache(clock, min_refresh_s=30)
    cache.key_for("rsa-1")
    clock.advance(31)
    for kid in ("random-1", "random-2", "random-3"):
        with pytest.raises(AuthError) as caught:
            cache.key_for(kid)
        assert caught.value.code == INVALID_TOKEN
        clock.advance(5)
    assert issuer.requests == 2  # the first unknown kid refreshed; the next two were throttled
    clock.advance(30)
    with pytest.raises(AuthError):
        cache.key_for("random-4")
    assert issuer.requests == 3


def test_a_flood_of_unknown_kids_from_many_threads_costs_one_fetch(
    rsa1: SigningKey, clock: FakeClock
) -> None:
    issuer = FakeIssuer(jwks(rsa1))
    cache = issuer.cache(clock)
    cache.key_for("rsa-1")
    clock.advance(60)
    errors: list[str] = []

    def attack(n: int) -> None:
        try:
            cache.key_for(f"random-{n}")
        except AuthError as error:
            errors.append(error.code)

    threads = [threading.Thread(target=attack, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [INVALID_TOKEN] * 16
    assert issuer.requests == 2


def test_keys_older_than_the_ttl_are_refetched(rsa1: SigningKey, rsa2: SigningKey, clock: FakeClock) -> None:
    issuer = FakeIssuer(jwks(rsa1))
    cache = issuer.cache(clock, ttl_s=600)
    cache.key_for("rsa-1")
    issuer.document = jwks(rsa2)
    clock.advance(601)
    # The TTL refresh replaces the set: the retired key is gone, without a second, kid-driven fetch
    with pytest.raises(AuthError):
        cache.key_for("rsa-1")
    assert issuer.requests == 2
    assert cache.key_for("rsa-2").key_id == "rsa-2"


@pytest.mark.parametrize(
    "breakage",
    ["status", "network", "not json", "no keys", "wrong shape"],
)
def test_a_failed_refresh_keeps_the_last_good_keys(
    breakage: str, rsa1: SigningKey, rsa2: SigningKey, clock: FakeClock
) -> None:
    issuer = FakeIssuer(jwks(rsa1))
    cache = issuer.cache(clock)
    good = cache.key_for("rsa-1")
    _break(issuer, breakage)
    clock.advance(700)  # past the TTL: the next lookup refreshes, and that fails
    assert cache.key_for("rsa-1") is good
    assert issuer.requests == 2
    with pytest.raises(AuthError) as caught:
        cache.key_for("rsa-2")  # unknown, but inside min_refresh_s of the failed attempt: no fetch
    assert caught.value.code == INVALID_TOKEN
    assert issuer.requests == 2


@pytest.mark.parametrize("breakage", ["status", "network", "not json", "no keys", "wrong shape"])
def test_without_any_keys_a_fetch_failure_is_unavailable_and_names_no_secret(
    breakage: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    issuer = FakeIssuer({})
    _break(issuer, breakage)
    cache = issuer.cache(clock)
    with pytest.raises(AuthError) as caught:
        cache.key_for("rsa-1")
    error = caught.value
    assert error.code == UNAVAILABLE
    assert "issuer.example.test/pool/.well-known/jwks.json" in error.reason
    shown = "".join(traceback.format_exception(error)) + repr(error) + caplog.text
    assert "JWKS fetch failed" in caplog.text
    for secret in ("alice", "s3cret", "k3y"):
        assert secret not in shown


def test_an_explicit_refresh_raises_on_failure(clock: FakeClock) -> None:
    issuer = FakeIssuer({})
    _break(issuer, "status")
    with pytest.raises(AuthError) as caught:
        issuer.cache(clock).refresh()
    assert "HTTP 503" in caught.value.reason


def test_the_first_fetch_is_retried_after_the_throttle_interval(rsa1: SigningKey, clock: FakeClock) -> None:
    issuer = FakeIssuer(jwks(rsa1))
    _break(issuer, "network")
    cache = issuer.cache(clock)
    with pytest.raises(AuthError):
        cache.key_for("rsa-1")
    with pytest.raises(AuthError):
        cache.key_for("rsa-1")
    assert issuer.requests == 1
    issuer.fail_with = None
    clock.advance(30)
    assert cache.key_for("rsa-1").key_id == "rsa-1"


def test_a_key_is_prepared_for_the_token_alg_when_its_jwk_names_none(
    rsa1: SigningKey, clock: FakeClock
) -> None:
    cache = FakeIssuer(jwks(rsa1, with_alg=False)).cache(clock)
    assert cache.key_for("rsa-1", "PS256").algorithm_name == "PS256"
    assert cache.key_for("rsa-1", "RS512").algorithm_name == "RS512"
    assert cache.key_for("rsa-1", "PS256") is cache.key_for("rsa-1", "PS256")


@pytest.mark.parametrize(
    ("kid", "alg", "why"),
    [
        ("rsa-1", "PS256", "the JWK says RS256"),
        ("rsa-1", "ES256", "an RSA key for an EC alg"),
        ("ec-1", "RS256", "an EC key for an RSA alg"),
        ("ec-384", "ES256", "a P-384 key for ES256"),
        ("rsa-1", "HS256", "HMAC is never a key's alg here"),
    ],
)
def test_a_key_that_does_not_fit_the_alg_is_refused(
    kid: str, alg: str, why: str, clock: FakeClock, rsa1: SigningKey, ec1: SigningKey, ec384: SigningKey
) -> None:
    document = {"keys": [rsa1.jwk(), ec1.jwk(), ec384.jwk(with_alg=False)]}
    cache = FakeIssuer(document).cache(clock)
    with pytest.raises(AuthError) as caught:
        cache.key_for(kid, alg)
    assert caught.value.code == INVALID_TOKEN, why


def test_symmetric_encryption_and_kidless_keys_are_skipped(rsa1: SigningKey, rsa2: SigningKey) -> None:
    document: dict[str, Any] = {
        "keys": [
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            rsa2.jwk(use="enc"),
            {k: v for k, v in rsa2.jwk().items() if k != "kid"},
            {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
            "not a key",
            rsa1.jwk(),
        ]
    }
    assert list(parse_jwks(document)) == ["rsa-1"]


def test_a_jwks_with_only_unusable_keys_is_a_failure() -> None:
    with pytest.raises(AuthError) as caught:
        parse_jwks({"keys": [{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}]})
    assert caught.value.code == UNAVAILABLE


def test_redact_drops_credentials_query_and_fragment() -> None:
    assert redact("https://u:p@h.example:8443/jwks?x=1#f") == "https://h.example:8443/jwks"
    assert redact("http://[::1]:9000/k") == "http://[::1]:9000/k"


def _break(issuer: FakeIssuer, how: str) -> None:
    if how == "status":
        issuer.status = 503
    elif how == "network":
        issuer.fail_with = httpx.ConnectError(
            "connection refused to https://alice:s3cret@issuer.example.test"
        )
    elif how == "not json":
        issuer.body = b"<html>maintenance</html>"
    elif how == "no keys":
        issuer.document = {"keys": []}
    elif how == "wrong shape":
        issuer.document = ["keys"]


def test_fake_issuer_is_usable_directly(rsa1: SigningKey, clock: FakeClock) -> None:
    # A JwksCache built by hand on a MockTransport behaves like the helper-built one.
    issuer = FakeIssuer(jwks(rsa1))
    cache = JwksCache(
        "https://issuer.example.test/jwks",
        httpx.Client(transport=httpx.MockTransport(issuer.handle)),
        clock=clock,
    )
    assert cache.key_for("rsa-1").key_id == "rsa-1"
