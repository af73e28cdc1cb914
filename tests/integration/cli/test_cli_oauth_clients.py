"""`cairn oauth-clients`: the operator lists the clients dynamic registration made and revokes one,
which deletes its app client in the user pool (moto's Cognito) and frees its place under the cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth.oauth.registration import ClientMetadata
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.cli import main
from tests.support.cognito_pool import cognito_pool

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_pool"


def test_clients_are_listed_and_one_revoked_frees_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with cognito_pool(monkeypatch) as pool:
        settings = {
            "CAIRN_JWT_ISSUER": ISSUER,
            "CAIRN_JWT_AUDIENCE": f'["{pool.static_client_id}"]',
            "CAIRN_JWT_USER_GROUPS": "true",
            "CAIRN_COGNITO_DOMAIN": "https://cairn-test.auth.us-east-1.amazoncognito.com",
            "CAIRN_COGNITO_USER_POOL_ID": pool.pool_id,
            "CAIRN_AWS_ENDPOINT_URL": pool.endpoint,
            "CAIRN_OAUTH_MAX_CLIENTS": "2",
        }
        for key, value in settings.items():
            monkeypatch.setenv(key, value)
        data = tmp_path / "data"
        container = build_container(Settings(data_dir=data))
        assert container.sign_in is not None and container.sign_in.registration is not None
        registration = container.sign_in.registration
        made = [
            registration.register(
                ClientMetadata(redirect_uris=[f"http://127.0.0.1:{port}/callback"], client_name=name),
                "198.51.100.7",
            ).client_id
            for port, name in ((40001, "Claude Code"), (40002, "Cursor"))
        ]

        assert main(["oauth-clients", "list", "--data-dir", str(data)]) == 0
        listed = capsys.readouterr().out
        assert all(client in listed for client in made) and "2 active registered clients" in listed
        assert "Claude Code" in listed and "http://127.0.0.1:40002/callback" in listed
        assert listed.count("never used") == 2
        assert container.sign_in.registered.knows(made[1])  # a token of Cursor came in
        main(["oauth-clients", "list", "--data-dir", str(data)])
        assert "first used" in capsys.readouterr().out

        assert main(["oauth-clients", "revoke", made[0], "--data-dir", str(data)]) == 0
        assert f"{made[0]} revoked" in capsys.readouterr().out
        in_pool = pool.client.list_user_pool_clients(UserPoolId=pool.pool_id, MaxResults=60)[
            "UserPoolClients"
        ]
        assert made[0] not in {c["ClientId"] for c in in_pool} and made[1] in {c["ClientId"] for c in in_pool}
        assert not container.sign_in.registered.knows(made[0])

        main(["oauth-clients", "list", "--data-dir", str(data)])
        assert made[0] not in capsys.readouterr().out
        main(["oauth-clients", "list", "--all", "--data-dir", str(data)])
        assert f"{made[0]}" in capsys.readouterr().out
        registration.register(  # its place is free again
            ClientMetadata(redirect_uris=["http://127.0.0.1:40003/callback"]), "198.51.100.8"
        )

        code = main(["oauth-clients", "revoke", "no-such-client", "--data-dir", str(data)])
        assert code == 2 and "no registered OAuth client" in capsys.readouterr().err


def test_a_revoke_without_the_pools_settings_says_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    build_container(Settings(data_dir=data)).brains.create("Notes")
    assert main(["oauth-clients", "list", "--data-dir", str(data)]) == 0
    assert "0 active registered clients" in capsys.readouterr().out
    code = main(["oauth-clients", "revoke", "abc", "--data-dir", str(data)])
    err = capsys.readouterr().err
    assert code == 2 and "client registration is not configured here" in err and "Traceback" not in err
