"""Dynamic client registration (POST /register, RFC 7591) fuzzed on a live Cairn whose app clients
are made in a user pool on moto: client metadata whose redirect URIs are built from schemes, user
info, hosts (loopback, look-alikes, the operator's), ports, paths with dot segments and encoded
slashes, queries and fragments, whose other members hold any JSON value, and bodies that are not
metadata at all.

Whatever is sent: 201, 400 or 413, never more; no ERROR logged; `no-store` on every answer; a
refusal in RFC 7591's shape that echoes nothing sent but the offending URI; and a client made in
the pool exactly when the answer is 201, with exactly the URIs sent, each of which an independent
reading (httpx's URL parser, not the policy's urlsplit) finds on loopback, among the documented
clients' callbacks or under what the operator allowed.

CAIRN_FUZZ_EXAMPLES sets the examples (4 times it; 60 by default) for a longer hunt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.auth.oauth.redirects import HOSTED
from tests.support.fuzzing import EXAMPLES, errors_logged, fixed
from tests.support.schema_args import NASTY, json_values
from tests.support.sign_in import SignInStack, sign_in_stack

pytestmark = pytest.mark.integration
ALLOWED = ["https://agents.example.test/oauth/*", "myagent://callback"]
MARKER = "client-name-never-echoed"
SCHEMES = ("http", "https", "HTTP", "myagent", "javascript", "JavaScript", "data", "file", "", "http:")
HOSTS = (
    "127.0.0.1", "localhost", "[::1]", "LOCALHOST", "localhost.", "127.0.0.1.nip.io", "127.1",
    "0x7f.0.0.1", "evil.example", "localhost.evil.example", "agents.example.test",
    "agents.example.test.evil.example", "callback", "127.0.0.1\\@evil.example", "",
)  # fmt: skip
USERINFO = ("", "user@", "127.0.0.1@", "a:b@", "%40@")
PORTS = ("", ":0", ":8080", ":65535", ":65536", ":-1", ":x", ":")
PATHS = (
    "", "/", "/callback", "/oauth/callback", "/oauth/../admin", "/oauth/%2e%2e/admin",
    "/oauth/%2fadmin", "/oauth/..%5cadmin", "/oauth/./x", "//evil.example", "/\\evil.example",
)  # fmt: skip
ATTACKS = (
    "http://localhost.evil.example/cb", "http://127.0.0.1.nip.io/cb", "http://127.0.0.1@evil.example/",
    "http://127.0.0.1\\@evil.example/", "http://evil.example\\@127.0.0.1/", "http://127.0.0.1:80@evil.example/",
    "https://agents.example.test/oauth/../admin", "https://agents.example.test/oauth/%2e%2e/admin",
    "https://agents.example.test/oauth/..%5cadmin", "https://agents.example.test/oauth/%2Fadmin",
    "https://agents.example.test.evil.example/oauth/cb", "https://agents.example.test/oauth/cb#x",
    "myagent://callback/../x", "myagent://callback.evil", "javascript://127.0.0.1/%0aalert(1)",
    "http://[::1].evil.example/", "http://127.0.0.1/cb\n", "HTTPS://LOCALHOST.evil.example/",
)  # fmt: skip
"""What a redirect policy is most likely to let through by mistake."""
TAILS = ("", "?x=1", "#frag", "?next=https://evil.example", " ", "\n", "\u2028")


def _uri() -> st.SearchStrategy[str]:
    built = st.tuples(
        st.sampled_from(SCHEMES),
        st.sampled_from(("://", ":", ":/", ":///")),
        st.sampled_from(USERINFO),
        st.sampled_from(HOSTS),
        st.sampled_from(PORTS),
        st.sampled_from(PATHS) | st.text(max_size=12).map(lambda t: "/" + t),
        st.sampled_from(TAILS),
    ).map("".join)
    plausible = st.tuples(
        st.sampled_from(("http://", "https://")),
        st.sampled_from(("127.0.0.1", "localhost", "[::1]", "agents.example.test")) | st.sampled_from(HOSTS),
        st.sampled_from(("", ":8080", ":65535")),
        st.sampled_from(PATHS[:6]),
        st.sampled_from(("", "?x=1")),
    ).map("".join)
    known = st.sampled_from((*HOSTED, *(a.rstrip("*") + "cb" for a in ALLOWED), "myagent://callback/x"))
    attacks = st.sampled_from(ATTACKS)
    return st.one_of(built, plausible, attacks, known, st.text(max_size=30))


def _metadata() -> st.SearchStrategy[Any]:
    alone = st.sampled_from(ATTACKS).map(lambda uri: [uri])  # with no other URI to be refused for
    uris = st.lists(_uri(), min_size=1, max_size=3)
    members = st.fixed_dictionaries(
        {"redirect_uris": st.one_of(alone, alone, uris, uris, st.lists(_uri(), max_size=12))},
        optional={
            "client_name": st.just(MARKER),
            "grant_types": st.just(["authorization_code", "refresh_token"]),
            "response_types": st.just(["code"]),
            "token_endpoint_auth_method": st.sampled_from(("none", "client_secret_post")),
            "scope": st.just("cairn/documents:read"),
            "client_secret": st.text(max_size=20),
        },
    )
    names = st.sampled_from(("redirect_uris", "client_name", "grant_types", "scope")) | st.text(max_size=8)
    odd = st.dictionaries(names, json_values, max_size=2)
    changed = st.tuples(members, st.one_of(st.just({}), st.just({}), st.just({}), odd)).map(
        lambda m: {**m[0], **m[1]}
    )
    return st.one_of(changed, changed, changed, json_values)


def _body() -> st.SearchStrategy[bytes]:
    as_json = _metadata().map(lambda m: json.dumps(m).encode())
    raw = st.sampled_from(NASTY).map(lambda n: n.encode("utf-8", "surrogatepass")) | st.binary(max_size=40)
    return as_json | raw | st.just(b"{" + b" " * 20_000 + b"}")


def _acceptable(uri: str) -> bool:
    """Whether a browser, reading the URI, would go somewhere a client may be sent back to."""
    if uri in HOSTED or uri == "myagent://callback":
        return True
    try:
        url = httpx.URL(uri)
    except (httpx.InvalidURL, ValueError):
        return False
    if url.userinfo or url.fragment or any(c.isspace() or ord(c) < 0x20 for c in uri):
        return False
    if url.scheme in ("http", "https") and url.host in ("127.0.0.1", "localhost", "::1"):
        return True
    segments = unquote(url.path).replace("\\", "/").split("/")
    return (
        uri.startswith("https://agents.example.test/oauth/")
        and url.host == "agents.example.test"
        and not any(s in (".", "..") for s in segments)
        and "%2f" not in url.path.lower()
        and "%5c" not in url.path.lower()
    )


def _clients(stack: SignInStack) -> int:
    pages = stack.pool.client.get_paginator("list_user_pool_clients").paginate(UserPoolId=stack.pool.pool_id)
    return sum(len(page["UserPoolClients"]) for page in pages)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignInStack]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        tmp = Path(tmp_path_factory.mktemp("register"))
        settings = {"oauth_allowed_redirects": ALLOWED, "oauth_registrations_per_hour": 0}
        with sign_in_stack(tmp, monkeypatch, **settings) as running:
            yield running


@fixed(4 * EXAMPLES)
@given(body=_body(), as_json=st.booleans())
def test_a_registration_answers_as_rfc_7591_and_registers_only_what_is_allowed(
    stack: SignInStack, body: bytes, as_json: bool
) -> None:
    headers = {"content-type": "application/json"} if as_json else {}
    before = _clients(stack)
    with errors_logged() as errors:
        answer = httpx.post(f"{stack.base}/register", content=body, headers=headers, timeout=30)
    assert errors.seen == []
    assert answer.status_code in (201, 400, 413), answer.text
    if answer.status_code != 201:
        assert _clients(stack) == before, "a refused registration made a client"
    if answer.status_code == 413:
        assert len(body) > 16 * 1024
        return
    assert answer.headers["cache-control"] == "no-store"
    reply = answer.json()
    if answer.status_code == 400:
        assert set(reply) == {"error", "error_description"}
        assert reply["error"] in ("invalid_redirect_uri", "invalid_client_metadata")
        assert MARKER not in answer.text
        return
    sent = json.loads(body)["redirect_uris"]
    made = stack.pool.app_client(reply["client_id"])
    assert made is not None and _clients(stack) == before + 1, "a 201 without one client made"
    assert made["CallbackURLs"] == reply["redirect_uris"] == list(dict.fromkeys(sent))
    refused = [uri for uri in sent if not _acceptable(uri)]
    assert refused == [], f"registered what a browser reads as elsewhere: {refused}"
    assert "client_secret" not in reply or reply["token_endpoint_auth_method"] != "none"
