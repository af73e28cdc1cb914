"""Signing in to the web UI with a user pool account: the authorization code flow with PKCE from
/ui/sign-in/cognito to /ui/callback, against the fake Cognito (a sign-in domain on 127.0.0.1 reading
its app clients from a pool on moto), through the whole FastAPI app. The browser is the TestClient
(Cairn's side) plus httpx at the fake's authorize endpoint (the pool's side)."""

from __future__ import annotations

import base64
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from cairn.container import Container
from cairn.entrypoints.http import create_app
from cairn.entrypoints.ui import cognito as ui_cognito
from tests.fakes.container import fake_container
from tests.support.cognito_pool import SIGN_IN_SCOPES, cognito_pool
from tests.support.fake_cognito import FakeCognito, User, fake_cognito
from tests.support.sign_in import pkce

CALLBACK = "http://localhost/ui/callback"
TENANT = "dev"


@dataclass
class UiStack:
    client: TestClient
    cognito: FakeCognito
    ui_client_id: str
    container: Container


@contextmanager
def ui_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user: User | None = None, **settings: Any
) -> Iterator[UiStack]:
    with cognito_pool(monkeypatch) as pool, fake_cognito(pool.app_client, pool.pool_id, user) as cognito:
        ui_client_id = pool.client.create_user_pool_client(
            UserPoolId=pool.pool_id,
            ClientName="cairn-test-web-ui",
            GenerateSecret=False,
            AllowedOAuthFlowsUserPoolClient=True,
            AllowedOAuthFlows=["code"],
            AllowedOAuthScopes=SIGN_IN_SCOPES,
            CallbackURLs=[CALLBACK],
            SupportedIdentityProviders=["COGNITO"],
        )["UserPoolClient"]["ClientId"]
        configured: dict[str, Any] = {
            "jwt_issuer": cognito.issuer,
            "jwt_audience": [pool.static_client_id, ui_client_id],
            "jwt_scope_prefix": "cairn/",
            "jwt_user_groups": True,
            "jwt_default_tenant": TENANT,
            "cognito_domain": cognito.domain,
            "ui_client_id": ui_client_id,
            **settings,
        }
        container = fake_container(tmp_path, **configured)
        with TestClient(create_app(container), base_url="http://localhost", follow_redirects=False) as client:
            yield UiStack(client, cognito, ui_client_id, container)


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[UiStack]:
    with ui_stack(tmp_path, monkeypatch) as s:
        yield s


def start(t: TestClient, next: str = "/ui") -> str:
    """The browser asks the UI to sign in with the pool: where it is sent."""
    answer = t.get("/ui/sign-in/cognito", params={"next": next})
    assert answer.status_code == 303, answer.text
    return answer.headers["location"]


def at_the_pool(authorize_url: str) -> str:
    """The browser at the pool's authorize endpoint (the fake signs its user in at once): where it
    is sent back."""
    answer = httpx.get(authorize_url, follow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(CALLBACK + "?"), location
    return location


def back(t: TestClient, location: str) -> httpx.Response:
    parts = urlsplit(location)
    return t.get(f"{parts.path}?{parts.query}")


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def set_cookies(answer: httpx.Response) -> list[str]:
    return answer.headers.get_list("set-cookie")


def sets_session(answer: httpx.Response) -> bool:
    return any(c.startswith("cairn_ui=") and not c.startswith('cairn_ui=""') for c in set_cookies(answer))


def refresh_target(page: str) -> str:
    found = re.search(r'http-equiv="refresh" content="0;url=([^"]*)"', page)
    assert found, page
    return found.group(1).replace("&amp;", "&")


def test_the_sign_in_link_sends_the_browser_to_the_pool_with_pkce_for_the_ui_callback(stack: UiStack) -> None:
    form = stack.client.get("/ui/sign-in")
    assert 'href="/ui/sign-in/cognito?next=' in form.text  # the page offers it when configured

    location = start(stack.client)

    assert location.startswith(f"{stack.cognito.domain}/oauth2/authorize?")
    q = query(location)
    assert q["response_type"] == "code"
    assert q["client_id"] == stack.ui_client_id
    assert q["redirect_uri"] == CALLBACK
    assert q["code_challenge_method"] == "S256" and re.fullmatch(r"[A-Za-z0-9_-]{43}", q["code_challenge"])
    assert len(q["state"]) >= 32
    assert q["scope"].split() == [
        "openid",
        "cairn/documents:read",
        "cairn/documents:write",
        "cairn/brains:admin",
    ]
    (flow,) = [
        c for c in set_cookies(stack.client.get("/ui/sign-in/cognito")) if c.startswith("cairn_ui_signin=")
    ]
    attributes = flow.lower()
    assert "httponly" in attributes and "samesite=lax" in attributes and "path=/;" in attributes
    assert "max-age=600" in attributes


def test_over_https_the_flow_cookie_is_host_only_and_an_unprefixed_one_is_not_read(stack: UiStack) -> None:
    """A sibling subdomain can set `cairn_ui_signin` for the parent domain, with its own state and
    verifier, and send the browser to the callback with its own code: the browser would come back
    signed in as the planter. Over HTTPS the flow cookie is `__Host-` named, which only this host
    can set, and the unprefixed name is not read."""
    with TestClient(create_app(stack.container), base_url="https://localhost", follow_redirects=False) as t:
        (flow,) = [c for c in set_cookies(t.get("/ui/sign-in/cognito")) if "cairn_ui_signin=" in c]
        assert flow.startswith("__Host-cairn_ui_signin=")
        assert {"secure", "httponly", "path=/"} <= {part.strip().lower() for part in flow.split(";")}
        verifier, _ = pkce()
        planted = f"{'s' * 43}.{verifier}.{base64.urlsafe_b64encode(b'/ui').decode().rstrip('=')}"
        callback = {"code": "the-planters-code", "state": "s" * 43}

        tossed = t.get("/ui/callback", params=callback, headers={"cookie": f"cairn_ui_signin={planted}"})
        own = t.get("/ui/callback", params=callback, headers={"cookie": f"__Host-cairn_ui_signin={planted}"})

        assert tossed.status_code == 400 and "could not be matched" in tossed.text
        assert "could not be matched" not in own.text and "did not issue a token" in own.text  # the pool's


def test_a_full_sign_in_keeps_the_access_token_and_the_ui_answers_as_that_user(stack: UiStack) -> None:
    t = stack.client
    assert t.get("/ui").status_code == 303  # not signed in yet: sent to the sign-in page

    returned = at_the_pool(start(t, next="/ui/brains/notes?page=2"))
    code = query(returned)["code"]
    landing = back(t, returned)

    assert landing.status_code == 200, landing.text
    assert refresh_target(landing.text) == "/ui/brains/notes?page=2"
    (session,) = [c for c in set_cookies(landing) if c.startswith("cairn_ui=")]
    assert "httponly" in session.lower() and "samesite=strict" in session.lower()
    assert code not in landing.text and code not in str(landing.headers)
    assert landing.headers["cache-control"] == "no-store"
    assert landing.headers["referrer-policy"] == "no-referrer"
    # The code was exchanged with the verifier (the fake checks it against the challenge), no secret.
    (exchange,) = stack.cognito.token_requests
    assert exchange["client_id"] == stack.ui_client_id and exchange["redirect_uri"] == CALLBACK
    assert exchange["code_verifier"] and "client_secret" not in exchange
    # The flow cookie is spent: the same callback again is refused.
    assert any(c.startswith("cairn_ui_signin=") and "max-age=0" in c.lower() for c in set_cookies(landing))

    page = t.get("/ui")
    assert page.status_code == 200, page.text
    assert f"{TENANT}/{stack.cognito.user.sub}" in page.text
    assert back(t, returned).status_code == 400  # replaying the return: no flow left


@pytest.mark.parametrize("how", ["wrong state", "no state", "no flow cookie"])
def test_a_return_that_does_not_match_the_browsers_sign_in_is_refused(stack: UiStack, how: str) -> None:
    t = stack.client
    returned = at_the_pool(start(t))
    q = query(returned)
    if how == "wrong state":
        answer = t.get("/ui/callback", params={"code": q["code"], "state": q["state"][:-2] + "xx"})
    elif how == "no state":
        answer = t.get("/ui/callback", params={"code": q["code"]})
    else:
        t.cookies.clear()
        answer = back(t, returned)

    assert answer.status_code == 400
    assert "could not be matched to this browser" in answer.text
    assert not sets_session(answer)
    assert q["code"] not in answer.text
    assert stack.cognito.token_requests == []  # the code was never exchanged
    assert t.get("/ui").status_code == 303


def test_a_denied_sign_in_says_so_and_signs_nobody_in(stack: UiStack) -> None:
    t = stack.client
    state = query(start(t))["state"]

    denied = t.get("/ui/callback", params={"error": "access_denied", "state": state})
    assert denied.status_code == 401
    assert "The sign-in was cancelled or refused" in denied.text
    assert 'href="/ui/sign-in/cognito' in denied.text  # and a way to try again
    assert not sets_session(denied)

    state = query(start(t))["state"]
    strange = t.get(
        "/ui/callback",
        params={"error": "<script>alert(1)</script>", "error_description": "x<b>y", "state": state},
    )
    assert strange.status_code == 400 and "The sign-in did not complete." in strange.text
    assert "<script>alert" not in strange.text and "x<b>y" not in strange.text
    assert not sets_session(strange)


def test_an_error_sent_by_another_page_leaves_the_sign_in_in_progress(stack: UiStack) -> None:
    t = stack.client
    returned = at_the_pool(start(t))

    for params in ({"error": "access_denied"}, {"error": "access_denied", "state": "forged"}):
        forged = t.get("/ui/callback", params=params)  # another site navigates the browser here
        assert forged.status_code == 400 and "could not be matched to this browser" in forged.text
        assert not any(c.startswith("cairn_ui_signin=") for c in set_cookies(forged))

    landing = back(t, returned)  # the real return still completes the sign-in
    assert landing.status_code == 200 and sets_session(landing)


def test_a_code_the_token_endpoint_refuses_answers_a_page(stack: UiStack) -> None:
    t = stack.client
    state = query(start(t))["state"]

    answer = t.get("/ui/callback", params={"code": "forged-code-1234", "state": state})

    assert answer.status_code == 400  # the code is refused: the caller's, not the service's, failure
    assert "did not issue a token (invalid_grant)" in answer.text
    assert "forged-code-1234" not in answer.text
    assert not sets_session(answer)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("how", ["unreachable", "silent"])
def test_a_token_endpoint_that_cannot_be_reached_or_does_not_answer_is_a_page_not_a_500(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1] if how == "silent" else _closed_port()
    monkeypatch.setattr(ui_cognito, "TOKEN_TIMEOUT_S", 0.5)
    domain = f"http://127.0.0.1:{port}"
    container = fake_container(
        tmp_path,
        jwt_issuer=f"{domain}/us-east-1_pool",
        jwt_audience=["web-ui"],
        cognito_domain=domain,
        ui_client_id="web-ui",
    )
    try:
        with TestClient(create_app(container), base_url="http://localhost", follow_redirects=False) as t:
            state = query(start(t))["state"]
            answer = t.get("/ui/callback", params={"code": "a-code-5678", "state": state})
    finally:
        silent.close()

    if how == "silent":
        assert answer.status_code == 504 and "did not answer in time" in answer.text
    else:
        assert answer.status_code == 502 and "could not be reached" in answer.text
    assert "a-code-5678" not in answer.text
    assert not sets_session(answer)


@pytest.mark.parametrize(
    "next",
    [
        "https://evil.example/ui",
        "//evil.example/ui",
        "/ui\\@evil.example",
        "javascript:alert(1)",
        "/v1/brains",
    ],
)
def test_next_cannot_send_the_browser_off_the_ui(stack: UiStack, next: str) -> None:
    t = stack.client
    landing = back(t, at_the_pool(start(t, next=next)))

    assert landing.status_code == 200
    assert refresh_target(landing.text) == "/ui"


def test_a_forged_flow_cookie_cannot_name_another_site_either(stack: UiStack) -> None:
    t = stack.client
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": stack.ui_client_id,
        "redirect_uri": CALLBACK,
        "state": "s" * 43,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    returned = httpx.get(f"{stack.cognito.domain}/oauth2/authorize", params=params, timeout=30)
    evil = base64.urlsafe_b64encode(b"https://evil.example/").decode().rstrip("=")
    t.cookies.set("cairn_ui_signin", f"{'s' * 43}.{verifier}.{evil}", path="/ui/callback")

    landing = back(t, returned.headers["location"])

    assert landing.status_code == 200, landing.text
    assert refresh_target(landing.text) == "/ui"


def test_a_token_cairn_does_not_accept_is_refused_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ui_stack(tmp_path, monkeypatch, jwt_audience=["some-other-client"]) as s:
        answer = back(s.client, at_the_pool(start(s.client)))

        assert answer.status_code == 401
        assert "Cairn did not accept the token" in answer.text
        assert not sets_session(answer)


def test_an_account_without_a_cairn_group_is_told_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ui_stack(tmp_path, monkeypatch, user=User(groups=[])) as s:
        answer = back(s.client, at_the_pool(start(s.client)))

        assert answer.status_code == 403
        assert "has no Cairn scope" in answer.text
        assert not sets_session(answer)


def test_without_a_ui_client_there_is_no_pool_sign_in(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="ui-cognito-test-token-0123456789")
    with TestClient(create_app(container), base_url="http://localhost", follow_redirects=False) as t:
        assert "/ui/sign-in/cognito" not in t.get("/ui/sign-in").text
        answer = t.get("/ui/sign-in/cognito")
        assert answer.status_code == 404 and "not configured" in answer.text
        assert t.get("/ui/callback", params={"code": "c", "state": "s"}).status_code == 404


def test_signing_in_again_with_the_pool_ends_the_browsers_session(stack: UiStack) -> None:
    """The pool sends the browser back cross-site, without the Strict session cookie: the session
    is ended when the browser leaves for the pool, so no copy of its cookie outlives it."""
    t = stack.client
    back(t, at_the_pool(start(t)))
    first = t.cookies.get("cairn_ui")
    assert first and t.get("/ui").status_code == 200

    for site in ("same-site", "cross-site"):  # an <img> on another page: the session stays
        sent = t.get("/ui/sign-in/cognito", params={"next": "/ui"}, headers={"sec-fetch-site": site})
        assert sent.status_code == 303 and not any(c.startswith('cairn_ui=""') for c in set_cookies(sent))
        assert t.get("/ui", headers={"cookie": f"cairn_ui={first}"}).status_code == 200
    leaving = t.get("/ui/sign-in/cognito", params={"next": "/ui"}, headers={"sec-fetch-site": "same-origin"})

    assert leaving.status_code == 303 and any(c.startswith('cairn_ui=""') for c in set_cookies(leaving))
    t.cookies.clear()
    assert t.get("/ui", headers={"cookie": f"cairn_ui={first}"}).status_code == 303
