"""`cairn secret [status|rotate|drop-previous]` on a data directory: the key file rotated (the old
key kept), an erased subject still erased in a server opened before the rotation and in one opened
after, the drop refused while a mark is under the previous key and allowed once it was re-keyed.
No output quotes a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.erasure.subjects import Subject
from tests.integration.cli.test_cli import run


def test_rotate_then_drop_once_the_marks_are_rekeyed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    before = build_container(Settings(data_dir=data))  # a server that runs through the rotation
    brain = before.brains.create("Team", slug="team")
    before.erasure.erased.mark(Subject.of("session_actor", "alice"), [brain.id])
    erased_at = before.erasure.erased.actor_since(brain.id, "alice")
    old = (data / "store-secret.key").read_text().strip()

    code, out, _ = run(capsys, "secret", "rotate", "--data-dir", str(data))
    ring = json.loads((data / "store-secret.key").read_text())
    assert code == 0 and ring["previous"][0]["key"] == old and ring["current"]["id"] in out
    assert "1 under another key" in out and "not yet safe to drop" in out
    assert old not in out and ring["current"]["key"] not in out

    code, _, err = run(capsys, "secret", "drop-previous", "--data-dir", str(data))
    assert code == 2 and "still under a previous key" in err and "--force" in err
    assert json.loads((data / "store-secret.key").read_text()) == ring

    after = build_container(Settings(data_dir=data))
    after.erasure.erased.mark(Subject.of("session_actor", "bea"), [brain.id])
    assert before.erasure.erased.actor_since(brain.id, "bea") is not None  # made under the new key
    assert after.erasure.erased.actor_since(brain.id, "alice") == erased_at  # and re-keyed

    code, out, _ = run(capsys, "secret", "--data-dir", str(data))
    assert code == 0 and "safe to drop the previous keys" in out and "not yet" not in out
    code, out, _ = run(capsys, "secret", "drop-previous", "--data-dir", str(data))
    assert code == 0 and "previous keys: none" in out
    assert json.loads((data / "store-secret.key").read_text())["previous"] == []

    reopened = build_container(Settings(data_dir=data))
    assert reopened.erasure.erased.actor_since(brain.id, "alice") == erased_at
    assert reopened.erasure.erased.actor_since(brain.id, "carl") is None  # nothing forgotten
    assert before.erasure.erased.actor_since(brain.id, "alice") == erased_at


def test_check_says_when_marks_are_still_under_a_previous_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data))
    brain = container.brains.create("Team", slug="team")
    code, out, _ = run(capsys, "check", "--data-dir", str(data))
    assert code == 0 and "previous key" not in out  # never rotated: nothing to say

    container.erasure.erased.mark(Subject.of("session_actor", "alice"), [brain.id])
    assert run(capsys, "secret", "rotate", "--data-dir", str(data))[0] == 0
    code, out, _ = run(capsys, "check", "--data-dir", str(data))
    assert code == 0 and "not yet safe to drop the previous keys: 1 marks" in out


def test_marks_under_a_key_dropped_by_force_are_listed_apart_and_hold_back_no_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data))
    brain = container.brains.create("Team", slug="team")
    container.erasure.erased.mark(Subject.of("session_actor", "alice"), [brain.id])
    assert run(capsys, "secret", "rotate", "--data-dir", str(data))[0] == 0
    assert run(capsys, "secret", "drop-previous", "--force", "--data-dir", str(data))[0] == 0

    assert run(capsys, "secret", "rotate", "--data-dir", str(data))[0] == 0
    code, out, _ = run(capsys, "secret", "--data-dir", str(data))
    assert code == 0 and "1 under a key the secret no longer holds" in out
    assert "safe to drop the previous keys" in out and "not yet" not in out
    code, out, _ = run(capsys, "secret", "drop-previous", "--data-dir", str(data))
    assert code == 0 and "previous keys: none" in out
