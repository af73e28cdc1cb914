"""JwtVerifier: what a token must be to pass, and that every other token fails as invalid_token."""

from __future__ import annotations

import traceback
from typing import Any

import pytest

from cairn.auth.errors import INVALID_TOKEN, AuthError
from cairn.auth.jwt_verify import JwtVerifier
from tests.unit.auth.fakes import FakeClock, FakeIssuer
from tests.unit.auth.tokens import (
    AUDIENCE,
    ISSUER,
    NOW,
    SigningKey,
    claims,
    hs256_with,
    jwks,
    rsa_key,
    unsigned,
)


@pytest.fixture
def issuer(rsa1: SigningKey, ec1: SigningKey) -> FakeIssuer:
    return FakeIssuer(jwks(rsa1, ec1))


def verifier(issuer: FakeIssuer, **options: Any) -> JwtVerifier:
    options.setdefault("audiences", [AUDIENCE])
    return JwtVerifier(issuer.cache(FakeClock()), issuer=ISSUER, clock=lambda: NOW, **options)


def refused(verify: JwtVerifier, token: str) -> AuthError:
    with pytest.raises(AuthError) as caught:
        verify.verify(token)
    error = caught.value
    assert error.code == INVALID_TOKEN
    shown = "".join(traceback.format_exception(error)) + repr(error)
    for part in [token, *token.split(".")]:
        assert len(part) < 8 or part not in shown  # neither the token nor any of its segments
    return error


@pytest.mark.parametrize("signer", ["rsa1", "ec1"])
def test_a_good_token_yields_its_claims(
    signer: str, issuer: FakeIssuer, request: pytest.FixtureRequest
) -> None:
    key: SigningKey = request.getfixturevalue(signer)
    token = key.sign(claims())
    assert verifier(issuer).verify(token) == claims()


def test_ps256_with_a_jwk_that_names_no_alg(rsa1: SigningKey) -> None:
    issuer = FakeIssuer(jwks(rsa1, with_alg=False))
    assert verifier(issuer).verify(rsa1.sign(claims(), alg="PS256"))["sub"] == "user-1"


def test_one_of_several_audiences_in_the_token_is_enough(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    token = rsa1.sign(claims(aud=["https://other.example.test", AUDIENCE]))
    assert verifier(issuer, audiences=["https://x.example.test", AUDIENCE]).verify(token)["sub"] == "user-1"


def test_an_id_token_is_taken_only_from_the_clients_listed_for_them(
    rsa1: SigningKey, issuer: FakeIssuer
) -> None:
    cli, sign_in = "cli-client", "sign-in-client"
    only_cli = verifier(issuer, audiences=[cli, sign_in], id_token_audiences=[cli])
    assert only_cli.verify(rsa1.sign(claims(aud=cli, token_use="id")))["aud"] == cli
    error = refused(only_cli, rsa1.sign(claims(aud=sign_in, token_use="id")))
    assert "ID tokens are not taken here" in error.reason
    access = {"aud": None, "token_use": "access", "client_id": sign_in}
    assert only_cli.verify(rsa1.sign(claims(**access)))["client_id"] == sign_in  # its access token is
    unlisted = verifier(issuer, audiences=[cli, sign_in])  # unset: as before, any audience
    assert unlisted.verify(rsa1.sign(claims(aud=sign_in, token_use="id")))["aud"] == sign_in


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"exp": int(NOW) - 61}, "expired"),
        ({"exp": int(NOW) - 3600}, "expired"),
        ({"nbf": int(NOW) + 61}, "not valid yet"),
        ({"iat": int(NOW) + 3600}, "issued in the future"),
        ({"iss": "https://evil.example.test/pool"}, "issuer"),
        ({"aud": "https://other.example.test/mcp"}, "not meant for this server"),
        ({"aud": ["https://other.example.test/mcp"]}, "not meant for this server"),
        ({"aud": None}, "no aud claim"),
        ({"exp": None}, "no exp claim"),
        ({"iss": None}, "no iss claim"),
        ({"exp": "tomorrow"}, "exp claim is not a number"),
        ({"nbf": [1]}, "nbf claim is not a number"),
        ({"exp": True}, "exp claim is not a number"),
    ],
)
def test_claims_that_fail(
    overrides: dict[str, Any], reason: str, rsa1: SigningKey, issuer: FakeIssuer
) -> None:
    error = refused(verifier(issuer), rsa1.sign(claims(**overrides)))
    assert reason in error.reason


@pytest.mark.parametrize(
    "overrides",
    [
        {"exp": int(NOW) - 59},
        {"nbf": int(NOW) + 59},
        {"iat": int(NOW) + 59},
        {"exp": int(NOW) + 1, "nbf": NOW},
    ],
)
def test_times_within_the_leeway_pass(
    overrides: dict[str, Any], rsa1: SigningKey, issuer: FakeIssuer
) -> None:
    assert verifier(issuer, leeway_s=60).verify(rsa1.sign(claims(**overrides)))["sub"] == "user-1"


def test_leeway_zero_refuses_a_token_expired_one_second_ago(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    refused(verifier(issuer, leeway_s=0), rsa1.sign(claims(exp=int(NOW) - 1)))


def test_alg_none_is_refused(issuer: FakeIssuer) -> None:
    error = refused(verifier(issuer), unsigned(claims(), kid="rsa-1"))
    assert "alg is not allowed" in error.reason


def test_hs256_signed_with_the_rsa_public_key_is_refused(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    # Given the classic confusion attack: the public key's PEM used as an HMAC secret
    for secret in (rsa1.public_pem(), rsa1.public_pem().strip()):
        token = hs256_with(secret, claims(), kid="rsa-1")
        # Then the header's alg is refused before any key is looked at
        assert "alg is not allowed" in refused(verifier(issuer), token).reason
    assert issuer.requests == 0


def test_an_alg_outside_the_configured_list_is_refused(ec1: SigningKey, issuer: FakeIssuer) -> None:
    refused(verifier(issuer, algorithms=["RS256"]), ec1.sign(claims()))


def test_a_token_whose_alg_differs_from_its_jwk_alg_is_refused(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    # The JWK says RS256; a PS256 signature by the same private key still must not pass
    error = refused(verifier(issuer), rsa1.sign(claims(), alg="PS256"))
    assert "alg its signing key is for" in error.reason


def test_a_token_naming_an_ec_key_with_an_rsa_alg_is_refused(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    token = rsa1.sign(claims(), kid="ec-1")
    refused(verifier(issuer), token)


def test_a_missing_kid_is_refused(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    token = rsa1.sign(claims(), kid=None)
    assert "kid" in refused(verifier(issuer), token).reason


def test_an_unknown_kid_is_refused(rsa2: SigningKey, issuer: FakeIssuer) -> None:
    assert "kid" in refused(verifier(issuer), rsa2.sign(claims())).reason


def test_a_signature_by_another_key_under_a_known_kid_is_refused(
    rsa2: SigningKey, issuer: FakeIssuer
) -> None:
    token = rsa2.sign(claims(), kid="rsa-1")
    assert "signature" in refused(verifier(issuer), token).reason


def test_a_tampered_payload_is_refused(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    header, _, signature = rsa1.sign(claims()).split(".")
    forged = rsa1.sign(claims(tenant="other")).split(".")[1]
    refused(verifier(issuer), f"{header}.{forged}.{signature}")


def test_critical_header_parameters_are_refused(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    # (PyJWT >= 2.11 refuses unknown crit itself, as "malformed"; earlier, the verifier does)
    refused(verifier(issuer), rsa1.sign(claims(), crit=["exp"]))


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "eyJhbGciOiJSUzI1NiJ9..", "x" * 20_000, "é.é.é"])
def test_malformed_tokens_are_refused(token: str, issuer: FakeIssuer) -> None:
    refused(verifier(issuer), token)


@pytest.mark.parametrize(
    "options",
    [
        {"algorithms": ["HS256"]},
        {"algorithms": ["RS256", "none"]},
        {"algorithms": []},
        {"audiences": []},
        {"audiences": AUDIENCE},
        {"audiences": [""]},
    ],
)
def test_unsafe_configurations_are_refused(options: dict[str, Any], issuer: FakeIssuer) -> None:
    with pytest.raises(ValueError):
        verifier(issuer, **options)


def cognito_access(**overrides: Any) -> dict[str, Any]:
    """A Cognito access token's claims: client_id and token_use, no aud."""
    return claims(**{"aud": None, "token_use": "access", "client_id": AUDIENCE, **overrides})


def test_a_cognito_access_token_passes_by_its_client_id(rsa1: SigningKey, issuer: FakeIssuer) -> None:
    assert verifier(issuer).verify(rsa1.sign(cognito_access()))["client_id"] == AUDIENCE


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"client_id": "another-app-client"}, "(client_id)"),
        ({"token_use": "id"}, "no aud claim"),
        ({"token_use": None}, "no aud claim"),
        ({"client_id": None}, "no aud claim"),
        ({"aud": "another-app-client"}, "(aud)"),  # a present aud is what counts, not client_id
        ({"aud": [1, 2]}, "malformed"),
    ],
)
def test_client_id_stands_in_only_for_a_missing_aud_on_access_tokens(
    overrides: dict[str, Any], reason: str, rsa1: SigningKey, issuer: FakeIssuer
) -> None:
    error = refused(verifier(issuer), rsa1.sign(cognito_access(**overrides)))
    assert reason in error.reason


def test_only_a_refused_token_whose_signature_holds_is_authentic(
    rsa1: SigningKey, issuer: FakeIssuer
) -> None:
    """What a guesser cannot make (the issuer's signature) marks the refusal as no guess
    (auth/rate_limit.py FailedSignIns): expired, another audience; a forged or malformed one is not."""
    verify = verifier(issuer)
    assert refused(verify, rsa1.sign(claims(exp=int(NOW) - 3600))).authentic
    assert refused(verify, rsa1.sign(claims(aud="https://elsewhere.example.test/mcp"))).authentic
    forged = SigningKey(rsa1.kid, rsa1.alg, rsa_key("other").private).sign(claims())
    assert not refused(verify, forged).authentic
    assert not refused(verify, unsigned(claims(), rsa1.kid)).authentic
    assert not refused(verify, "not.a.token").authentic
