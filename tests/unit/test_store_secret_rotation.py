"""Rotating the store's secret where it is kept (ports/store_secret.py, domain/key_rings.py): the
embedded store's key file, read in the single-key format an earlier release wrote, rewritten whole
as a ring (mode 0600, the old key kept) and left as it was when the write fails; the AWS stack's
Secrets Manager secret, a JSON ring written as a new version, or a single value rotated by Secrets
Manager's own versions (AWSCURRENT, AWSPREVIOUS). No error quotes a key."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.secrets_manager_secret import SecretsManagerSecret
from cairn.adapters.local.store_secret import FileStoreSecret
from cairn.domain.errors import Conflict, Unavailable
from tests.contract.aws_storage import REGION, fake_credentials

LEGACY = "ab" * 32


@contextmanager
def secret_made(monkeypatch: pytest.MonkeyPatch, value: str) -> Iterator[tuple[Any, str]]:
    """Secrets Manager under moto, holding a secret `cairn-store-dev` of `value`: its client and ARN."""
    fake_credentials(monkeypatch)
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        yield client, client.create_secret(Name="cairn-store-dev", SecretString=value)["ARN"]


def test_an_earlier_releases_key_file_is_read_as_a_ring_and_rotated_keeping_it(tmp_path: Path) -> None:
    path = tmp_path / "store-secret.key"
    path.write_text(LEGACY + "\n")
    path.chmod(0o600)
    secret = FileStoreSecret(path)
    assert secret.ring().keys == (secret.ring().current,) and secret.read() == bytes.fromhex(LEGACY)

    rotated = secret.rotate()
    assert rotated.previous[0].value == bytes.fromhex(LEGACY) and rotated.current.value != bytes.fromhex(
        LEGACY
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert FileStoreSecret(path).ring() == rotated  # another process reads the same ring
    held = json.loads(path.read_text())
    assert held["previous"] == [{"id": rotated.previous[0].id, "key": LEGACY}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store-secret.key", "store-secret.key.lock"]

    again = FileStoreSecret(path).rotate()
    assert again.previous == (rotated.current, rotated.previous[0])
    with pytest.raises(Conflict, match="rotated meanwhile"):  # counted against the ring before
        FileStoreSecret(path).drop_previous(rotated.current.id)
    assert FileStoreSecret(path).ring() == again
    assert FileStoreSecret(path).drop_previous(again.current.id).keys == (again.current,)
    assert FileStoreSecret(path).ring().keys == (again.current,)


def test_a_stale_process_reads_the_ring_again_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "store-secret.key"
    stale = FileStoreSecret(path)
    first = stale.ring()
    rotated = FileStoreSecret(path).rotate()
    assert stale.ring() == first and stale.ring(fresh=True) == rotated


def test_a_rotation_whose_write_fails_leaves_the_key_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store-secret.key"
    path.write_text(LEGACY + "\n")
    path.chmod(0o600)

    def no_room(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_room)
    with pytest.raises(Unavailable, match="store's secret") as refused:
        FileStoreSecret(path).rotate()
    assert LEGACY not in str(refused.value)
    assert path.read_text() == LEGACY + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store-secret.key", "store-secret.key.lock"]


@pytest.mark.parametrize(
    "damage",
    [
        '{"current": {"id": "0000", "key": "' + LEGACY + '"}, "previous": []}',  # its id is not the key's
        '{"current": {"id": "x", "key": "abcd"}}',
        '{"current": "' + LEGACY + '"',
        "[]",
    ],
)
def test_a_damaged_ring_is_refused_and_never_quoted(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "store-secret.key"
    path.write_text(damage)
    path.chmod(0o600)
    with pytest.raises(Unavailable, match=r"store-secret\.key \(the store's secret\) cannot be used") as no:
        FileStoreSecret(path).ring()
    assert LEGACY not in str(no.value) and "abcd" not in str(no.value)
    with pytest.raises(Unavailable):
        FileStoreSecret(path).rotate()
    assert path.read_text() == damage


def test_the_secrets_manager_secret_rotates_as_a_json_ring_keeping_its_single_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with secret_made(monkeypatch, "s" * 64) as (client, arn):
        secret = SecretsManagerSecret(client, arn)
        legacy = secret.ring()
        assert legacy.current.value == b"s" * 64 and legacy.previous == ()

        rotated = secret.rotate()
        assert rotated.previous == (legacy.current,)
        assert SecretsManagerSecret(client, arn).ring() == rotated  # another function's container
        current = client.get_secret_value(SecretId=arn)["SecretString"]
        assert json.loads(current)["previous"] == [{"id": legacy.current.id, "key": "s" * 64}]
        previous = client.get_secret_value(SecretId=arn, VersionStage="AWSPREVIOUS")["SecretString"]
        assert previous == "s" * 64

        with pytest.raises(Conflict, match="rotated meanwhile"):
            SecretsManagerSecret(client, arn).drop_previous(legacy.current.id)
        assert SecretsManagerSecret(client, arn).drop_previous(rotated.current.id).keys == (rotated.current,)
        # the ring is the current version alone: the version before it (AWSPREVIOUS) adds nothing
        assert SecretsManagerSecret(client, arn).ring().keys == (rotated.current,)


def test_a_single_value_rotated_by_secrets_manager_keeps_the_previous_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with secret_made(monkeypatch, "s" * 64) as (client, arn):
        stale = SecretsManagerSecret(client, arn)
        before = stale.ring()
        client.put_secret_value(SecretId=arn, SecretString="t" * 64)  # `aws secretsmanager put-secret-value`

        ring = SecretsManagerSecret(client, arn).ring()
        assert ring.current.value == b"t" * 64 and ring.previous == (before.current,)
        assert stale.ring() == before and stale.ring(fresh=True) == ring


@pytest.mark.parametrize("value", ['{"current": {"id": "x", "key": "' + "s" * 64 + '"}}', '{"current"'])
def test_a_damaged_secrets_manager_ring_is_unavailable_and_never_shown(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    with secret_made(monkeypatch, value) as (client, arn):
        with pytest.raises(Unavailable, match="cairn-store-dev") as refused:
            SecretsManagerSecret(client, arn).ring()
        assert "s" * 64 not in str(refused.value)
        with pytest.raises(Unavailable):
            SecretsManagerSecret(client, arn).rotate()
        assert client.get_secret_value(SecretId=arn)["SecretString"] == value
