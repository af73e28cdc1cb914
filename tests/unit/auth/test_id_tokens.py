"""ID tokens through the whole authenticator, as the settings configure it: a client listed in
CAIRN_JWT_ID_TOKEN_AUDIENCE (the CLI's) signs its user in with its ID token; another client's ID
token, which carries no scope and so would get all of the user's group scopes past the scopes that
client asked for, is refused, while that client's access token is taken narrowed."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from cairn.auth.authenticate import Authenticator
from cairn.auth.errors import AuthError
from cairn.bootstrap.options import auth_options
from cairn.config import Settings
from tests.fakes.container import fake_container
from tests.unit.auth.fakes import FakeIssuer
from tests.unit.auth.tokens import ISSUER, SigningKey, claims, jwks

CLI, SIGN_IN = "cli-client", "sign-in-client"
USER = {"username": "alice", "cognito:groups": ["documents:read", "documents:write", "brains:admin"]}


def authenticator(tmp_path: Path, rsa1: SigningKey, **settings: object) -> Authenticator:
    configured = Settings(
        data_dir=tmp_path,
        jwt_issuer=ISSUER,
        jwt_audience=[CLI, SIGN_IN],
        jwt_user_groups=True,
        **settings,  # type: ignore[arg-type]
    )
    http = httpx.Client(transport=httpx.MockTransport(FakeIssuer(jwks(rsa1)).handle))
    return Authenticator(auth_options(configured), fake_container(tmp_path / "c").keys, http=http)


def bearer(rsa1: SigningKey, **overrides: object) -> str:
    return "Bearer " + rsa1.sign(claims(now=time.time(), **{**USER, "scope": None, **overrides}))


def test_only_the_listed_clients_id_tokens_sign_a_user_in(tmp_path: Path, rsa1: SigningKey) -> None:
    auth = authenticator(tmp_path, rsa1, jwt_id_token_audience=CLI)

    cli = auth.authenticate(bearer(rsa1, aud=CLI, token_use="id"))
    assert cli.scopes == frozenset({"documents:read", "documents:write", "brains:admin"})
    with pytest.raises(AuthError, match="ID tokens are not taken here"):
        auth.authenticate(bearer(rsa1, aud=SIGN_IN, token_use="id"))
    narrowed = auth.authenticate(
        bearer(rsa1, aud=None, token_use="access", client_id=SIGN_IN, scope="documents:read")
    )
    assert narrowed.scopes == frozenset({"documents:read"})


def test_unset_any_audiences_id_token_is_taken(tmp_path: Path, rsa1: SigningKey) -> None:
    auth = authenticator(tmp_path, rsa1)
    assert auth.authenticate(bearer(rsa1, aud=SIGN_IN, token_use="id")).scopes >= {"brains:admin"}
