"""`cairn keys create|list|revoke` on a data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth.api_keys import ApiKeyService
from cairn.bootstrap import build_container
from cairn.config import Settings
from tests.integration.cli.test_cli import run


def test_create_list_and_revoke_a_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    container = build_container(Settings(data_dir=Path(data)))
    brain = container.brains.create("Team", slug="team")

    code, out, _ = run(
        capsys, "keys", "create", "--name", "ci", "--tenant", "local", "--scope", "documents:read",
        "--brain", "team", "--data-dir", data,
    )  # fmt: skip
    assert code == 0
    plaintext = out.split("store it now): ")[1].strip()
    key_id = out.split()[0]

    code, listed, _ = run(capsys, "keys", "list", "--data-dir", data)
    assert code == 0 and key_id in listed and "local" in listed and f"brains={brain.id}" in listed
    assert plaintext not in listed and "active" in listed

    reopened = build_container(Settings(data_dir=Path(data)))
    keys = ApiKeyService(reopened.adapters.records, reopened.adapters.clock)
    principal = keys.authenticate(plaintext)
    assert principal is not None and principal.brains == frozenset({brain.id})

    code, out, _ = run(capsys, "keys", "revoke", key_id, "--data-dir", data)
    assert code == 0 and f"{key_id} revoked" in out
    assert keys.authenticate(plaintext) is None


def test_a_key_is_never_limited_to_another_tenants_brain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    team = build_container(Settings(data_dir=Path(data))).brains.create(
        "Team", slug="team", visibility="public"
    )

    code, out, err = run(
        capsys, "keys", "create", "--name", "ci", "--tenant", "acme", "--scope", "documents:read",
        "--brain", team.id, "--data-dir", data,
    )  # fmt: skip

    assert code == 2 and "validation_error" in err and "belongs to tenant local, not acme" in err
    assert "store it now" not in out
    code, out, err = run(  # by slug: a key's slugs are its own tenant's
        capsys, "keys", "create", "--name", "ci", "--tenant", "acme", "--scope", "documents:read",
        "--brain", "team", "--data-dir", data,
    )  # fmt: skip
    assert code == 2 and "not_found" in err and "tenant 'acme' has no brain 'team'" in err
    assert "store it now" not in out
    code, listed, _ = run(capsys, "keys", "list", "--data-dir", data)
    assert "no API keys" in listed  # nothing was made


def test_an_unknown_brain_or_key_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    code, _, err = run(
        capsys, "keys", "create", "--name", "ci", "--tenant", "acme", "--scope", "documents:read",
        "--brain", "nope", "--data-dir", data,
    )  # fmt: skip
    assert code == 2 and "not_found" in err
    code, _, err = run(capsys, "keys", "revoke", "key_01m80x4bc2sr9b7zb6nrchstdj", "--data-dir", data)
    assert code == 2 and "not_found" in err
    code, out, _ = run(capsys, "keys", "list", "--data-dir", data)
    assert "no API keys" in out
