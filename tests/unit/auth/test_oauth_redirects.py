"""The redirect URIs dynamic registration accepts: loopback on any port, the documented clients'
callbacks, the operator's exact URIs and prefixes; nothing with a fragment, user info or a
script-like scheme, and no more than ten URIs of at most 2 KB."""

from __future__ import annotations

import pytest

from cairn.auth.oauth.errors import InvalidRedirect
from cairn.auth.oauth.redirects import HOSTED, MAX_URI_BYTES, RedirectPolicy

LOOPBACK = [
    "http://127.0.0.1:33418/",  # VS Code
    "http://127.0.0.1/",
    "http://localhost:54321/callback",  # Claude Code
    "http://localhost:6274/oauth/callback",  # the MCP Inspector
    "http://localhost:6274/oauth/callback/debug",
    "http://[::1]:8080/cb",
    "http://LOCALHOST:9/cb",
    "http://127.0.0.1:/cb",  # an empty port is the scheme's
    "https://127.0.0.1:8443/cb?x=1",
]
REFUSED = [
    "https://evil.example/cb",
    "http://example.com/callback",  # plain http off loopback
    "http://127.0.0.1.evil.example/cb",
    "http://localhost.evil.example:80/cb",
    "http://[::1].evil.example/cb",  # urlsplit's hostname: ::1; any browser's: no host at all
    "http://[::1]evil.example/cb",
    "http://127.0.0.1:80:80/cb",
    "http://127.0.0.1:8080/cb#frag",
    "http://user@127.0.0.1:8080/cb",
    "javascript:alert(1)",
    "data:text/html,hi",
    "file:///etc/passwd",
    "vscode://vscode.github-authentication/did-authenticate",  # a custom scheme nobody allowed
    "cursor://anysphere.cursor-mcp/oauth/callback/extra",
    "https://claude.ai/api/mcp/auth_callback/../other",
    "/relative/callback",
    "http://127.0.0.1:99999999/cb",
    "http://127.0.0.1:80/c b",
    "",
]


@pytest.mark.parametrize("uri", LOOPBACK + sorted(HOSTED))
def test_loopback_and_the_documented_clients_callbacks_are_allowed(uri: str) -> None:
    assert RedirectPolicy().refusal(uri) is None


@pytest.mark.parametrize("uri", REFUSED)
def test_anything_else_is_refused_naming_the_uri(uri: str) -> None:
    reason = RedirectPolicy().refusal(uri)
    assert reason is not None
    assert repr(uri)[:40] in reason or uri == ""


def test_the_refusal_says_how_the_operator_allows_a_uri() -> None:
    with pytest.raises(InvalidRedirect) as refused:
        RedirectPolicy().checked(["http://127.0.0.1:5000/cb", "https://app.example.test/oauth/cb"])
    assert "'https://app.example.test/oauth/cb' is not allowed" in refused.value.message
    assert "CAIRN_OAUTH_ALLOWED_REDIRECTS" in refused.value.message
    assert refused.value.code == "invalid_redirect_uri"


def test_operator_entries_allow_exact_uris_and_prefixes() -> None:
    policy = RedirectPolicy(
        ["https://app.example.test/oauth/*", "https://other.example.test/cb", "myapp://cb"]
    )
    assert policy.refusal("https://app.example.test/oauth/callback") is None
    assert policy.refusal("https://other.example.test/cb") is None
    assert policy.refusal("myapp://cb") is None
    assert policy.refusal("https://app.example.test/oauthx") is not None
    assert policy.refusal("https://other.example.test/cb2") is not None
    assert (
        policy.refusal("https://app.example.test/oauth/cb#f") is not None
    )  # a fragment, even under a prefix


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example.test/oauth/../logout?next=https://evil.example/",
        "https://app.example.test/oauth/%2e%2e/redirect?to=https://evil.example/",
        "https://app.example.test/oauth/%2E./redirect",
        "https://app.example.test/oauth/./cb",
        "https://app.example.test/oauth/..%2fredirect",
        "https://app.example.test/oauth/..%5Credirect",
        "https://app.example.test/oauth/..\\redirect",
    ],
)
def test_a_uri_that_steps_out_of_an_allowed_prefix_is_refused(uri: str) -> None:
    policy = RedirectPolicy(["https://app.example.test/oauth/*"])
    refusal = policy.refusal(uri)
    assert refusal is not None and "dot segments or encoded slashes" in refusal
    assert policy.refusal("https://app.example.test/oauth/cb..v2?x=../y") is None  # not a segment


@pytest.mark.parametrize(
    "entry",
    [
        "https://example.com*",  # would match https://example.com.attacker.net/
        "http://intranet.example/cb",  # plain http off loopback
        "javascript:alert(1)*",
        "https://example.com/cb#frag",
        "not a uri",
    ],
)
def test_an_operator_entry_that_could_never_be_safe_stops_the_start(entry: str) -> None:
    with pytest.raises(ValueError, match="CAIRN_OAUTH_ALLOWED_REDIRECTS"):
        RedirectPolicy([entry])


def test_limits_on_count_and_size() -> None:
    policy = RedirectPolicy()
    ten = [f"http://127.0.0.1:{5000 + i}/cb" for i in range(10)]
    assert policy.checked(ten + ten[:1]) == ten  # duplicates dropped
    with pytest.raises(InvalidRedirect, match="at most 10"):
        policy.checked([*ten, "http://127.0.0.1:6000/cb"])
    long = "http://127.0.0.1:5000/" + "a" * MAX_URI_BYTES
    with pytest.raises(InvalidRedirect, match="longer than 1024 bytes") as refused:
        policy.checked([long])
    longest = "http://127.0.0.1:5000/" + "a" * (1024 - len("http://127.0.0.1:5000/"))
    assert policy.checked([longest]) == [longest]  # as long as Cognito takes a callback URL
    assert len(refused.value.message) < 1000  # the URI is quoted in part, not whole
    with pytest.raises(InvalidRedirect, match="at least one"):
        policy.checked([])
