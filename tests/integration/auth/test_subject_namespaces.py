"""A signed token whose `sub` is another kind of principal's subject (an API key's `key:<id>`,
which every admin of the tenant sees in the key listing, or the machine owner's `local`) owns
none of that principal's private brains: it does not list them, read them, change them or
create a brain in their name, on a real server whose JWTs are verified against a JWKS on loopback."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from cairn.auth.principal import ADMIN, READ, WRITE
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.integration.mcp.conftest import ServerThread
from tests.unit.auth.tokens import AUDIENCE, ISSUER, SigningKey, claims, jwks, rsa_key

ALL = f"{READ} {WRITE} {ADMIN}"


@dataclass
class World:
    base: str
    signer: SigningKey
    key: str  # acme's admin key, owner of the private brain `secret`
    key_subject: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    signer = rsa_key("k1")
    tmp = tmp_path_factory.mktemp("namespaces")
    with jwks_server(jwks(signer)) as issuer_keys:
        container = fake_container(
            tmp,
            jwt_issuer=ISSUER,
            jwt_jwks_url=issuer_keys.url,
            jwt_audience=[AUDIENCE],
            rate_limit_per_s=0,
            auth_failures_per_min=0,
        )
        made = container.keys.create(name="agent", tenant="acme", scopes=[READ, WRITE, ADMIN])
        container.brains.create("Diary", slug="ownerdiary")  # the machine owner's (tenant local)
        with ServerThread(container) as st:
            world = World(f"http://127.0.0.1:{st.port}", signer, made.plaintext, f"key:{made.key.id}")
            created = httpx.post(
                f"{world.base}/v1/brains", json={"name": "Secret", "slug": "secret"}, headers=_auth(world.key)
            )
            assert created.status_code == 201, created.text
            put = httpx.put(
                f"{world.base}/v1/brains/secret/documents",
                params={"path": "notes/plan.md"},
                content=b"# Plan\n\nThe launch code is tangerine.",
                headers={**_auth(world.key), "content-type": "application/octet-stream"},
            )
            assert put.status_code == 204, put.text
            yield world


def _auth(credential: str) -> dict[str, str]:
    return {"authorization": f"Bearer {credential}"}


def _token(world: World, **overrides: object) -> str:
    return world.signer.sign(claims(now=time.time(), **{"scope": ALL, **overrides}))


def _slugs(world: World, credential: str) -> set[str]:
    listed = httpx.get(f"{world.base}/v1/brains", headers=_auth(credential))
    assert listed.status_code == 200, listed.text
    return {b["slug"] for b in listed.json()["items"]}


def test_the_key_itself_owns_its_private_brain(world: World) -> None:
    assert "secret" in _slugs(world, world.key)
    found = httpx.post(
        f"{world.base}/v1/brains/secret/search", json={"query": "launch code"}, headers=_auth(world.key)
    )
    assert found.status_code == 200 and found.json()["hits"], found.text


@pytest.mark.parametrize(
    ("tenant", "subject", "brain"),
    [("acme", "key", "secret"), ("local", "local", "ownerdiary")],
)
def test_a_token_naming_another_kinds_subject_owns_none_of_its_brains(
    world: World, tenant: str, subject: str, brain: str
) -> None:
    sub = world.key_subject if subject == "key" else subject
    token = _token(world, tenant=tenant, sub=sub)
    stranger = _token(world, tenant=tenant, sub="someone-else")
    base = f"{world.base}/v1/brains/{brain}"

    assert brain not in _slugs(world, token)
    answers = [
        httpx.get(base, headers=_auth(token)),
        httpx.post(f"{base}/search", json={"query": "launch code"}, headers=_auth(token)),
        httpx.patch(base, json={"name": "Mine now"}, headers=_auth(token)),
    ]
    twins = [
        httpx.get(base, headers=_auth(stranger)),
        httpx.post(f"{base}/search", json={"query": "launch code"}, headers=_auth(stranger)),
        httpx.patch(base, json={"name": "Mine now"}, headers=_auth(stranger)),
    ]
    assert [a.status_code for a in answers] == [t.status_code for t in twins] == [404, 404, 404]
    created = httpx.post(f"{world.base}/v1/brains", json={"name": "Planted"}, headers=_auth(token))
    assert created.status_code == 403, created.text
    assert "planted" not in _slugs(world, world.key)
