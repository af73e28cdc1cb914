"""Guessing credentials on the embedded server: an address that has had `auth_failure_burst`
credentials refused has what it sends refused unchecked (429, Retry-After) until its bucket
refills, a right guess included; in every surface's style, on the UI's sign-in form too. No
credential, an accepted one, an issuer's token refused for its dates or audience (no guess),
another address and an open server count nothing."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.integration.mcp.conftest import ServerThread
from tests.support.serve_config import served_as_cairn_serve
from tests.unit.auth.tokens import AUDIENCE, ISSUER, SigningKey, claims, jwks, rsa_key

TOKEN = "failed-sign-ins-static-token-0123"
BURST = 3
SLOW = {"auth_failure_burst": BURST, "auth_failures_per_min": 1.0}  # a minute a guess past the burst


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def guesses(client: httpx.Client, url: str, n: int) -> list[int]:
    return [client.get(url, headers=bearer(f"wrong-guess-{i}")).status_code for i in range(n)]


def test_past_the_burst_of_refusals_even_the_right_token_is_refused_unchecked(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, token=TOKEN, **SLOW)) as st, httpx.Client() as client:
        url = f"http://127.0.0.1:{st.port}/v1/brains"
        assert client.get(url, headers=bearer(TOKEN)).status_code == 200
        assert guesses(client, url, BURST) == [401] * BURST
        right = client.get(url, headers=bearer(TOKEN))
        assert right.status_code == 429
        assert 1 <= int(right.headers["retry-after"]) <= 60
        assert right.headers["content-type"].startswith("application/problem+json")
        assert right.json()["code"] == "rate_limited"
        assert "too many refused credentials" in right.json()["detail"]
        assert TOKEN not in right.text
        assert client.get(url).status_code == 401  # no credential: still asked to sign in


def test_no_credential_and_accepted_ones_count_nothing(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, token=TOKEN, **SLOW)) as st, httpx.Client() as client:
        url = f"http://127.0.0.1:{st.port}/v1/brains"
        assert {client.get(url).status_code for _ in range(3 * BURST)} == {401}
        assert {client.get(url, headers=bearer(TOKEN)).status_code for _ in range(3 * BURST)} == {200}
        assert guesses(client, url, BURST - 1) == [401] * (BURST - 1)
        assert client.get(url, headers=bearer(TOKEN)).status_code == 200


def test_another_address_is_not_blocked(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, token=TOKEN, **SLOW)) as st:
        url = f"http://127.0.0.1:{st.port}/v1/brains"
        with httpx.Client() as guesser:
            assert guesses(guesser, url, BURST + 2) == [401] * BURST + [429] * 2
        other = httpx.HTTPTransport(local_address="127.0.0.2")  # Linux answers all of 127/8
        with httpx.Client(transport=other) as client:
            assert client.get(url, headers=bearer(TOKEN)).status_code == 200


def test_a_blocked_address_is_told_in_each_surfaces_style(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, token=TOKEN, **SLOW)) as st, httpx.Client() as client:
        base = f"http://127.0.0.1:{st.port}"
        guesses(client, f"{base}/v1/brains", BURST)
        zengram = client.get(f"{base}/zengram/memory/search?q=x", headers={"x-api-key": TOKEN})
        assert zengram.status_code == 429 and "retry-after" in zengram.headers
        assert zengram.json()["error"].startswith("Too many refused credentials")
        mcp = client.post(
            f"{base}/mcp",
            headers={**bearer(TOKEN), "accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        assert mcp.status_code == 429 and "retry-after" in mcp.headers
        assert "too many refused credentials" in mcp.json()["error"]["message"]


@pytest.mark.anyio
async def test_an_mcp_client_that_guessed_wrong_fails_naming_the_delay(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, token=TOKEN, **SLOW)) as st:
        url = f"http://127.0.0.1:{st.port}/mcp"
        with httpx.Client() as client:
            guesses(client, f"http://127.0.0.1:{st.port}/v1/brains", BURST)
        with pytest.raises(Exception) as caught:  # the SDK wraps it in a group on connect
            http = httpx2.AsyncClient(headers=bearer(TOKEN), timeout=30)
            async with Client(streamable_http_client(url, http_client=http)) as session:
                await session.list_tools()
    errors = [e for e in _leaves(caught.value) if isinstance(e, MCPError)]
    assert errors, caught.value
    message = str(errors[0])
    assert "too many refused credentials" in message and "retry after" in message, message


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def test_an_issuers_token_refused_for_its_dates_is_no_guess_and_a_forged_one_is(tmp_path: Path) -> None:
    signer = rsa_key("k1")
    forger = SigningKey(signer.kid, signer.alg, rsa_key("k1").private)  # the same kid, another key
    now = time.time()
    with jwks_server(jwks(signer)) as keys:
        issuer = {"jwt_issuer": ISSUER, "jwt_jwks_url": keys.url, "jwt_audience": [AUDIENCE]}
        container = fake_container(tmp_path, token=TOKEN, **issuer, **SLOW)
        with ServerThread(container) as st, httpx.Client() as client:
            url = f"http://127.0.0.1:{st.port}/v1/brains"
            expired = signer.sign(claims(now=now - 7200))
            elsewhere = signer.sign(claims(now=now, aud="https://elsewhere.example.test/mcp"))
            for token in [expired, elsewhere] * BURST:
                assert client.get(url, headers=bearer(token)).status_code == 401
            assert client.get(url, headers=bearer(signer.sign(claims(now=now)))).status_code == 200
            forged = forger.sign(claims(now=now))
            assert [client.get(url, headers=bearer(forged)).status_code for _ in range(BURST + 1)] == [
                *[401] * BURST,
                429,
            ]


def test_an_open_server_counts_nothing(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, **SLOW)) as st, httpx.Client() as client:
        url = f"http://127.0.0.1:{st.port}/v1/brains"
        assert 429 not in guesses(client, url, 3 * BURST)
        assert client.get(url).status_code == 200


def _form_token(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found
    return found.group(1)


def test_the_sign_in_form_counts_in_the_same_buckets(tmp_path: Path) -> None:
    app = create_app(fake_container(tmp_path, token=TOKEN, **SLOW))
    with TestClient(app, base_url="http://localhost") as t:

        def sign_in(credential: str) -> httpx.Response:
            token = _form_token(t.get("/ui/sign-in").text)  # a sign-in gives the browser a new one
            data = {"credential": credential, "csrf": token, "next": "/ui"}
            return t.post("/ui/sign-in", data=data, follow_redirects=False)

        assert sign_in("").status_code == 400  # an empty form is no guess
        assert [sign_in(f"wrong-{i}").status_code for i in range(BURST - 1)] == [401] * (BURST - 1)
        assert sign_in(TOKEN).status_code == 303
        assert sign_in("wrong-last").status_code == 401
        refused = sign_in(TOKEN)
        assert refused.status_code == 429 and "retry-after" in refused.headers
        assert "too many refused credentials" in refused.text and TOKEN not in refused.text
        # the form and the Authorization header are one address's guesses
        assert t.get("/v1/brains", headers=bearer(TOKEN)).status_code == 429


def test_sign_ins_at_once_get_no_more_checks_than_the_burst(tmp_path: Path) -> None:
    """The form's sign-ins run on worker threads at once: each holds its place before its
    credential is looked at, so 40 wrong ones sent together get at most the burst's checks (each
    check made to take 50 ms, as a JWT's may, so that they overlap)."""
    container = fake_container(tmp_path, token=TOKEN, **SLOW)
    bind = container.authenticator.bind

    def slow_bind(credential: str) -> Any:
        time.sleep(0.05)
        return bind(credential)

    container.authenticator.bind = slow_bind  # type: ignore[method-assign]
    with ServerThread(container) as st:
        base = f"http://127.0.0.1:{st.port}"
        with httpx.Client(base_url=base) as client:
            token = _form_token(client.get("/ui/sign-in").text)
            cookies = dict(client.cookies)
        start = threading.Barrier(40)

        def sign_in(i: int) -> int:
            with httpx.Client(base_url=base, cookies=cookies) as own:
                start.wait()
                data = {"credential": f"wrong-{i}", "csrf": token, "next": "/ui"}
                return own.post("/ui/sign-in", data=data).status_code

        with ThreadPoolExecutor(40) as pool:
            statuses = list(pool.map(sign_in, range(40)))
    assert statuses.count(401) == BURST and statuses.count(429) == 40 - BURST, statuses


def test_tokens_at_once_get_no_more_checks_than_the_burst(tmp_path: Path) -> None:
    """A bearer token is looked at and its refusal counted with no await between, so 40 wrong
    ones sent together get at most the burst's checks (each check made to take 20 ms)."""
    container = fake_container(tmp_path, token=TOKEN, **SLOW)
    authenticate = container.authenticator.authenticate

    def slow_authenticate(authorization: str | None, event: Any = None) -> Any:
        time.sleep(0.02)
        return authenticate(authorization, event)

    container.authenticator.authenticate = slow_authenticate  # type: ignore[method-assign]
    with ServerThread(container) as st:
        url = f"http://127.0.0.1:{st.port}/v1/brains"
        start = threading.Barrier(40)

        def guess(i: int) -> int:
            with httpx.Client() as own:
                start.wait()
                return own.get(url, headers=bearer(f"wrong-{i}"), timeout=30).status_code

        with ThreadPoolExecutor(40) as pool:
            statuses = list(pool.map(guess, range(40)))
    assert statuses.count(401) == BURST and statuses.count(429) == 40 - BURST, statuses


@pytest.mark.parametrize(("proxies", "locked"), [(None, True), ("127.0.0.1", False)])
def test_forwarded_addresses_are_believed_only_from_the_proxies_named(
    tmp_path: Path, proxies: str | None, locked: bool
) -> None:
    container = fake_container(tmp_path, token=TOKEN, **SLOW)
    settings = Settings(data_dir=tmp_path / "unused", forwarded_allow_ips=proxies)
    with served_as_cairn_serve(create_app(container), settings) as port, httpx.Client() as client:
        codes = [
            client.get(
                f"http://127.0.0.1:{port}/v1/brains",
                headers={**bearer(f"wrong-{i}"), "x-forwarded-for": f"203.0.113.{i}"},
            ).status_code
            for i in range(BURST + 2)
        ]

    # a process on loopback posing as a new address each time is still one address, unless the
    # operator named loopback as its proxy
    assert codes == ([401] * BURST + [429, 429] if locked else [401] * (BURST + 2))
