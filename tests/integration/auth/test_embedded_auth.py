"""The embedded server's own authentication: open on loopback only, a static token, API keys,
rate limits per principal, and `cairn serve` refusing to start open beyond loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cairn.entrypoints.cli import main
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import ServerThread


def served(tmp_path: Path, **settings: object) -> Iterator[str]:
    container = fake_container(tmp_path, **settings)
    with ServerThread(container) as st:
        yield f"http://127.0.0.1:{st.port}"


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[str]:
    yield from served(tmp_path)


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[str]:
    yield from served(tmp_path, token="s3cret-token-value")


def test_without_any_configuration_loopback_is_open(open_server: str) -> None:
    assert httpx.get(f"{open_server}/v1/brains").status_code == 200


def test_a_static_token_is_required_once_configured(token_server: str) -> None:
    missing = httpx.get(f"{token_server}/v1/brains")
    wrong = httpx.get(f"{token_server}/v1/brains", headers={"authorization": "Bearer nope"})
    right = httpx.get(f"{token_server}/v1/brains", headers={"authorization": "Bearer s3cret-token-value"})

    assert missing.status_code == 401 and missing.json()["code"] == "unauthorized"
    assert 'resource_metadata="' in missing.headers["www-authenticate"]
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
    assert "s3cret" not in wrong.text
    assert right.status_code == 200
    assert httpx.get(f"{token_server}/healthz").status_code == 200  # health needs no credentials


def test_forwarded_headers_do_not_name_the_server_in_challenges_or_discovery(token_server: str) -> None:
    """Any client can send X-Forwarded-Host: it named the server in every challenge and discovery
    document, unquoted (a cache in front would hand MCP clients an attacker's metadata)."""
    forged = {"x-forwarded-host": 'evil.example", error="injected', "x-forwarded-proto": "javascript"}
    refused = httpx.post(
        f"{token_server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=forged
    )
    metadata = httpx.get(f"{token_server}/.well-known/oauth-protected-resource/mcp", headers=forged).json()

    challenge = refused.headers["www-authenticate"]
    assert refused.status_code == 401 and "evil" not in challenge and "injected" not in challenge
    assert challenge.startswith(f'Bearer resource_metadata="{token_server}/.well-known/')
    assert metadata["resource"] == f"{token_server}/mcp"


@pytest.mark.parametrize("suffix", ["%E4%B8%AD", "%C3%A9", "a%22b%0D%0Ac"])
def test_a_refused_mcp_path_past_ascii_is_named_percent_encoded(token_server: str, suffix: str) -> None:
    """The challenge names the path's metadata in a header, which holds no character past Latin-1:
    the decoded path went in as it was, and the server answered 500."""
    refused = httpx.post(f"{token_server}/mcp/{suffix}", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    assert refused.status_code == 401
    metadata = refused.headers["www-authenticate"].split('resource_metadata="', 1)[1].split('"', 1)[0]
    assert metadata.endswith(f"/.well-known/oauth-protected-resource/mcp/{suffix}")


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": []},
        {"jsonrpc": "2.0", "id": 1, "method": {"name": "ping"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": ["get_health"]}},
    ],
)
def test_a_message_of_the_wrong_kinds_to_a_path_with_public_tools_is_refused(
    token_server: str, message: dict[str, object]
) -> None:
    """Mnemosyne's path lets anyone call its health tool, so the body is read to tell such a call;
    a method or tool name that was a list went into a set lookup and the server answered 500."""
    refused = httpx.post(f"{token_server}/mcp/mnemosyne", json=message)

    assert refused.status_code == 401 and 'resource_metadata="' in refused.headers["www-authenticate"]


def test_an_api_key_authenticates_until_revoked(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="admin-token")
    created = container.keys.create(name="ci", tenant="local", scopes=["documents:read"])
    with ServerThread(container) as st:
        url = f"http://127.0.0.1:{st.port}/v1/brains"
        headers = {"authorization": f"Bearer {created.plaintext}"}
        assert httpx.get(url, headers=headers).status_code == 200
        container.keys.revoke(created.key.id)
        refused = httpx.get(url, headers=headers)
    assert refused.status_code == 401 and created.plaintext not in refused.text


def test_a_principal_past_its_rate_gets_429_with_retry_after(tmp_path: Path) -> None:
    for url in served(tmp_path, rate_limit_per_s=0.5, rate_limit_burst=2):
        statuses = [httpx.get(f"{url}/v1/brains").status_code for _ in range(3)]
        limited = httpx.get(f"{url}/v1/brains")
        assert statuses == [200, 200, 429] and limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1 and limited.json()["code"] == "rate_limited"


def test_serve_refuses_to_start_open_beyond_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "refusing to serve 0.0.0.0 without authentication" in err
    assert "bind 127.0.0.1" in err


def test_serve_on_the_aws_backend_refuses_to_start_open_on_loopback_too_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loopback implies no open serving of a store shared beyond this machine, so binding
    127.0.0.1 (which it is) is not offered as the way out."""
    monkeypatch.setenv("CAIRN_BACKEND", "aws")
    code = main(["serve", "--host", "127.0.0.1", "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2
    assert "refusing to serve the AWS backend's store without authentication" in err
    assert "bind 127.0.0.1" not in err and "--allow-open" in err


def test_serve_refuses_a_short_token_beyond_loopback_and_never_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused credential takes from no rate-limit bucket, so a server others can reach needs a
    token nobody can guess in the requests they may send; on loopback any token will do."""
    short = "hunter2-but-longer"  # 18 characters
    code = main(["serve", "--host", "0.0.0.0", "--token", short, "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "shorter than 24 characters" in err and short not in err
    monkeypatch.setenv("CAIRN_TOKEN", " " + short + " " * 10)  # padding does not count
    assert main(["serve", "--host", "192.0.2.1", "--data-dir", str(tmp_path / "data")]) == 2
    assert short not in capsys.readouterr().err
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_admin_routes_refuse_bad_input_and_change_nothing(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token="admin-token")
    admin = {"authorization": "Bearer admin-token"}
    with ServerThread(container) as st:
        base = f"http://127.0.0.1:{st.port}/v1/admin"
        bad_scope = httpx.post(
            f"{base}/keys", json={"name": "ci", "scopes": ["documents:delete"]}, headers=admin
        )
        no_scopes = httpx.post(f"{base}/keys", json={"name": "ci", "scopes": []}, headers=admin)
        unknown_brain = httpx.post(
            f"{base}/keys",
            json={"name": "ci", "scopes": ["documents:read"], "brains": ["nope"]},
            headers=admin,
        )
        backwards = httpx.get(
            f"{base}/audit",
            params={"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
            headers=admin,
        )
        unknown_key = httpx.delete(f"{base}/keys/key_01m80x4bc2sr9b7zb6nrchstdj", headers=admin)
    assert bad_scope.status_code == 400 and bad_scope.json()["code"] == "validation_error"
    assert no_scopes.status_code == 400 and unknown_brain.status_code == 404
    assert backwards.status_code == 400 and unknown_key.status_code == 404
    assert container.keys.list() == []


def test_serve_says_allow_open_beside_a_token_serves_callers_without_one_as_the_owner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--allow-open forces open serving even beside a credential (the AWS emulation's mode): a
    forgotten CAIRN_ALLOW_OPEN must not pass unnoticed once a token is set."""
    short = "hunter2-but-longer"  # refused after the warning, so nothing starts
    argv = ["serve", "--host", "0.0.0.0", "--token", short, "--allow-open", "--data-dir", str(tmp_path / "d")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--allow-open" in err and "served as the owner" in err and short not in err
    assert main(["serve", "--host", "0.0.0.0", "--token", short, "--data-dir", str(tmp_path / "d")]) == 2
    assert "served as the owner" not in capsys.readouterr().err
