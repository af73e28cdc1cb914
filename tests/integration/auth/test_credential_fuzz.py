"""Credentials fuzzed against a server that takes a static token, API keys and an issuer's JWTs:
tokens signed by the issuer's key whose claims (and header) hold any JSON value, tokens signed by
another key or by none, strings shaped like keys and tokens, and anything else, sent as a bearer
token, as zengram's `x-api-key`, as the web UI's session cookie and as other schemes, to a route of
every surface. Whatever is sent, the answer is under 500, nothing is logged as an error, and no
credential sent comes back in the answer or goes into the log.

CAIRN_FUZZ_EXAMPLES sets the examples per route (default 15) for a longer hunt."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.integration.mcp.conftest import ServerThread
from tests.support.fuzzing import EXAMPLES, ErrorLog, errors_logged, fixed
from tests.support.schema_args import NASTY, json_values
from tests.unit.auth.tokens import AUDIENCE, ISSUER, SigningKey, claims, jwks, rsa_key

TOKEN = "credential-fuzz-static-token-0123456789"
CLAIMS = (
    "iss", "aud", "sub", "tenant", "scope", "exp", "iat", "nbf", "token_use", "client_id",
    "cognito:groups", "username", "azp", "jti",
)  # fmt: skip
HEADERS = ("kid", "alg", "typ", "jku", "x5u", "crit")
PING = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEALTH = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "get_health", "arguments": {}},
}
ROUTES = (
    ("GET", "/v1/brains", None),
    ("POST", "/v1/brains/alpha/search", {"query": "boiler"}),
    ("POST", "/mcp", PING),
    ("POST", "/mcp/mnemosyne", HEALTH),
    ("POST", "/mcp/thoughtmcp", PING),
    ("GET", "/zengram/stats", None),
    ("GET", "/ui", None),
    ("GET", "/ui/brains/alpha", None),
)


@dataclass(frozen=True)
class World:
    base: str
    signer: SigningKey
    key: str
    """An API key of the tenant, read-only."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    signer = rsa_key("k1")
    tmp = tmp_path_factory.mktemp("credentials")
    with jwks_server(jwks(signer)) as issuer_keys:
        container = fake_container(
            tmp,
            token=TOKEN,
            jwt_issuer=ISSUER,
            jwt_jwks_url=issuer_keys.url,
            jwt_audience=[AUDIENCE],
            rate_limit_per_s=0,
            auth_failures_per_min=0,  # else, past 20 refusals, nothing sent is read (test_failed_sign_ins.py)
        )
        with access.acting_as(Principal("acme", "user-1", frozenset({READ, WRITE, ADMIN}), Via.jwt), ADMIN):
            container.brains.create("Alpha", slug="alpha", visibility="tenant")
        key = container.keys.create(name="reader", tenant="acme", scopes=[READ]).plaintext
        with ServerThread(container) as st:
            yield World(f"http://127.0.0.1:{st.port}", signer, key)


def _jwts(world: World) -> st.SearchStrategy[str]:
    """Tokens of the issuer's key with claims and header of any kind; of another key; of none."""
    other = rsa_key("k1")  # the same kid, another key
    now = time.time()
    changed = st.dictionaries(st.sampled_from(CLAIMS) | st.text(max_size=6), json_values, max_size=3)
    header = st.dictionaries(st.sampled_from(HEADERS), json_values | st.text(max_size=10), max_size=2)

    def signed(drawn: tuple[dict[str, Any], dict[str, Any], bool]) -> str:
        overrides, extra, by_other = drawn
        body = {**claims(now=now, scope=f"{READ} {WRITE}"), **overrides}
        extra = {k: v for k, v in extra.items() if k not in ("alg",)}
        try:
            return (other if by_other else world.signer).sign(body, **extra)
        except (TypeError, ValueError, jwt.PyJWTError):  # a header PyJWT will not write: its JSON instead
            return json.dumps([body, extra], default=str)

    return st.tuples(changed, header, st.booleans()).map(signed)


def _credentials(world: World) -> st.SearchStrategy[str]:
    shaped = st.sampled_from(
        (
            TOKEN,
            TOKEN + "x",
            world.key,
            world.key[:-1],
            world.key + "=",
            "cairn_key_" + "A" * 43,
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
            "a.b.c",
            "..",
            "x" * 20_000,
        )
    )
    printable = st.text(st.characters(min_codepoint=0x21, max_codepoint=0xFF), min_size=1, max_size=60)
    return _jwts(world) | shaped | st.sampled_from([n for n in NASTY if n.strip()]) | printable


def _sent(credential: str, how: str) -> dict[str, bytes]:
    """The headers that carry it, as bytes: a header may hold any Latin-1 byte, which httpx would
    refuse to encode from text."""
    if how == "bearer":
        name, value = "authorization", f"Bearer {credential}"
    elif how == "api-key":
        name, value = "x-api-key", credential
    elif how == "cookie":
        name, value = "cookie", f"cairn_ui={credential}"
    else:
        name, value = "authorization", f"{how} {credential}"
    return {name: value.encode("latin-1")}


@pytest.fixture
def errors() -> Iterator[ErrorLog]:
    with errors_logged("cairn", "uvicorn.error") as log:
        yield log


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return "\r" not in text and "\n" not in text and "\x00" not in text and text == text.strip()


def test_no_credential_breaks_a_route(
    world: World, errors: ErrorLog, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cairn")
    statuses: list[int] = []
    with httpx.Client(base_url=world.base, timeout=30) as client:

        @fixed(EXAMPLES * len(ROUTES))
        @given(
            st.sampled_from(ROUTES),
            _credentials(world).filter(_latin1),
            st.sampled_from(("bearer", "bearer", "api-key", "cookie", "Basic", "bearer")),
        )
        def call(route: tuple[str, str, Any], credential: str, how: str) -> None:
            method, path, body = route
            errors.seen.clear()
            caplog.clear()
            response = client.request(method, path, json=body, headers=_sent(credential, how))
            statuses.append(response.status_code)
            shown = (
                f"{method} {path} {how} {credential[:200]!r}: {response.status_code} {response.text[:300]}"
            )
            assert response.status_code < 500, shown
            assert not errors.seen, f"{shown}: {errors.seen}"
            if len(credential) >= 16 and credential not in (world.key, TOKEN):  # a secret is never echoed
                assert credential not in response.text, shown
                assert credential not in caplog.text, f"{shown}: logged"

        call()
    assert 200 in statuses and 401 in statuses, sorted(set(statuses))  # past authentication, and refused
