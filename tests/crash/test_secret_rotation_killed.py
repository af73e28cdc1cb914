"""`cairn secret rotate` killed with SIGKILL (what `kill -9` sends) before the new ring is renamed
over the key file, and after it, before any key check names it (cairn/faults.py): either way an
erasure made before is still answered as erased after a restart, nothing forgotten, and the
rotation can be run again or its previous key dropped once the marks are re-keyed."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from cairn.bootstrap.closing import close_stores
from cairn.services.erasure.subjects import Subject
from tests.support.processes import cli
from tests.support.soundness import opened

pytestmark = pytest.mark.integration
KILLED = -signal.SIGKILL


@pytest.mark.parametrize("point", ["secret.ring_made", "secret.rotated"])
def test_a_rotation_killed_at_each_point_leaves_every_erasure_checkable(data: Path, point: str) -> None:
    container = opened(data)
    brain = container.brains.resolve("shore")
    container.erasure.erased.mark(Subject.of("session_actor", "alice"), [brain.id])
    erased_at = container.erasure.erased.actor_since(brain.id, "alice")
    close_stores(container)
    old = (data / "store-secret.key").read_text()

    killed = cli("secret", "rotate", "--data-dir", str(data), faults=point)
    assert killed.returncode == KILLED, killed.stderr
    held = (data / "store-secret.key").read_text()
    if point == "secret.ring_made":
        assert held == old  # the old file, whole
    else:
        assert json.loads(held)["previous"][0]["key"] == old.strip()  # the new ring, the old key in it

    restarted = opened(data)
    assert restarted.erasure.erased.actor_since(brain.id, "alice") == erased_at
    assert restarted.erasure.erased.actor_since(brain.id, "bob") is None  # nothing forgotten
    close_stores(restarted)
    done = cli("secret", "rotate", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    # the copy of the ring the killed rotation had made holds keys: the next rotation removed it
    assert sorted(p.name for p in data.glob("store-secret.key*")) == [
        "store-secret.key",
        "store-secret.key.lock",
    ]
    again = opened(data)
    assert again.erasure.erased.actor_since(brain.id, "alice") == erased_at
    close_stores(again)
    dropped = cli("secret", "drop-previous", "--data-dir", str(data))
    assert dropped.returncode == 0 and "previous keys: none" in dropped.stdout, dropped.stderr
    assert opened(data).erasure.erased.actor_since(brain.id, "alice") == erased_at
