"""The store's secret (ports/store_secret.py): the embedded store's key file, made once and shared
by every process on the data directory, refused (never made again) when damaged; the AWS stack's
Secrets Manager secret, read once, refused with its name and the error's code, never its value.
And the index sweep removes the audit's erasure marks past their lifetime with it."""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.secrets_manager_secret import SecretsManagerSecret
from cairn.adapters.local.store_secret import FileStoreSecret
from cairn.bootstrap.sweep import index_sweeper
from cairn.domain.errors import Unavailable
from cairn.services.audit_marks import LIFETIME
from cairn.services.erasure.erased import LIFETIME as ERASED_LIFETIME
from cairn.services.erasure.subjects import Subject
from tests.contract.aws_storage import REGION, fake_credentials
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_container


def test_the_key_file_is_made_once_private_and_read_by_every_process(tmp_path: Path) -> None:
    path = tmp_path / "store-secret.key"
    first = FileStoreSecret(path).read()
    assert len(first) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert FileStoreSecret(path).read() == first
    assert [p.name for p in tmp_path.iterdir()] == ["store-secret.key"]  # no file left from its making


def test_a_key_file_others_may_read_is_used_with_a_warning_that_never_shows_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "store-secret.key"
    made = FileStoreSecret(path).read()
    with caplog.at_level(logging.WARNING, logger="cairn.adapters.local.store_secret"):
        assert FileStoreSecret(path).read() == made
        assert not caplog.records  # private: nothing said
        path.chmod(0o644)  # as a restore under a loose umask leaves it
        assert FileStoreSecret(path).read() == made
    assert [r.getMessage() for r in caplog.records] == [
        f"{path} (the store's secret) may be read by other users of this machine (mode 644): chmod 600 it"
    ]
    assert made.hex() not in caplog.text


def test_processes_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    path = tmp_path / "store-secret.key"
    got: list[bytes] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        got.append(FileStoreSecret(path).read())

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and len(set(got)) == 1 and FileStoreSecret(path).read() == got[0]


@pytest.mark.parametrize("damage", ["short", "not hex", "empty", "directory", "link"])
def test_a_damaged_key_file_is_refused_and_left_as_it_is(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "store-secret.key"
    if damage == "directory":
        path.mkdir()
    elif damage == "link":
        (tmp_path / "elsewhere").write_text("ab" * 32)
        path.symlink_to(tmp_path / "elsewhere")
    else:
        path.write_text({"short": "ab" * 8, "not hex": "zz" * 32, "empty": ""}[damage])
    before = os.lstat(path)
    with pytest.raises(
        Unavailable, match=r"store-secret\.key \(the store's secret\) cannot be used"
    ) as refused:
        FileStoreSecret(path).read()
    assert "ab" * 8 not in str(refused.value)
    after = os.lstat(path)
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )


def test_the_secrets_manager_secret_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_credentials(monkeypatch)
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        arn = client.create_secret(Name="cairn-store-dev", SecretString="s" * 64)["ARN"]
        calls: list[str] = []
        client.meta.events.register(
            "before-parameter-build.secrets-manager.GetSecretValue",
            lambda params, **kw: calls.append(params.get("VersionStage")),
        )
        secret = SecretsManagerSecret(client, arn)
        assert secret.read() == b"s" * 64 and secret.read() == b"s" * 64
        assert calls == ["AWSCURRENT", "AWSPREVIOUS"]  # a single value: a rotation's previous one too


@pytest.mark.parametrize("case", ["missing", "short", "unset"])
def test_an_unusable_secrets_manager_secret_is_unavailable_and_never_shown(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    fake_credentials(monkeypatch)
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        client.create_secret(Name="cairn-store-dev", SecretString="tiny-secret-value")
        secret_id = {"missing": "cairn-store-gone", "short": "cairn-store-dev", "unset": ""}[case]
        with pytest.raises(Unavailable, match="store's secret") as refused:
            SecretsManagerSecret(client, secret_id).read()
        assert "tiny-secret-value" not in str(refused.value)
        if case == "missing":
            assert "ResourceNotFoundException" in str(refused.value) and "cairn-store-gone" in str(
                refused.value
            )


def test_the_index_sweep_removes_erasure_marks_past_their_lifetime(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    clock = container.adapters.clock
    assert isinstance(clock, FakeClock)
    container.audit.redact(tenants=["local"], brain_ids=[], subjects=["ann"])
    sweeper = index_sweeper(container)

    def marked() -> int:
        return len(container.adapters.records.scan(["audit-erased"]).items)

    assert marked() == 2  # the mark and its expiry
    sweeper.tick()
    assert marked() == 2
    clock.advance(LIFETIME.total_seconds() + 1)
    sweeper.tick()
    assert marked() == 0


def test_the_index_sweep_removes_erased_subjects_marks_past_their_lifetime(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    clock = container.adapters.clock
    assert isinstance(clock, FakeClock)
    container.erasure.erased.mark(Subject.of("session_actor", "ann"), ["brn_1"])
    sweeper = index_sweeper(container)

    def marked() -> int:
        records = container.adapters.records
        return len(records.query("erased").items) + len(records.query("erased-expiry").items)

    assert marked() == 2  # the mark and its expiry
    sweeper.tick()
    assert marked() == 2
    clock.advance(ERASED_LIFETIME.total_seconds() + 1)
    sweeper.tick()
    assert marked() == 0


def test_a_busy_store_leaves_the_marks_to_the_next_sweep_and_the_other_chores_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    container = fake_container(tmp_path)
    clock = container.adapters.clock
    assert isinstance(clock, FakeClock)
    container.audit.redact(tenants=["local"], brain_ids=[], subjects=["ann"])
    clock.advance(LIFETIME.total_seconds() + 1)
    records = container.adapters.records
    ran: list[str] = []
    sweeper = index_sweeper(container)
    sweeper.chores = (*sweeper.chores, lambda _stop: ran.append("last chore"))

    query = records.query

    def busy(pk: str, *args: object, **kwargs: object) -> object:
        if pk == "audit-erased-expiry":  # busy as the sweep reaches the marks
            raise Unavailable("the record store is busy (its writer lock is held)")
        return query(pk, *args, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as held:
        held.setattr(records, "query", busy)
        sweeper.tick()
    assert ran == ["last chore"] and "wait for the next sweep" in caplog.text
    assert len(records.scan(["audit-erased"]).items) == 2
    sweeper.tick()
    assert len(records.scan(["audit-erased"]).items) == 0
