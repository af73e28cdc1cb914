"""An erasure whose audit marks cannot be keyed (the store's secret unavailable: a missing or
damaged key file, Secrets Manager refusing) is refused before anything goes: no receipt, the
subject's memory rows, documents and audit entries as they were; asked again once the secret is
back, it runs whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.domain.errors import Unavailable
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from cairn.services.thoughtmcp.models import NewMemory
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.container import fake_container
from tests.fakes.records import MemoryRecordStore
from tests.fakes.store_secret import FakeStoreSecret


def test_an_erasure_without_the_secret_is_refused_before_anything_goes(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    secret = c.adapters.store_secret
    assert isinstance(secret, FakeStoreSecret)
    with access.as_system():
        brain = c.brains.create("Team", slug="team", metadata={BRAIN_MARK: True})
        made = c.thoughts.remember(
            brain,
            NewMemory(
                content="The vault code is on the wall.", user_id="xavier", session_id="s1", sector="semantic"
            ),
        )
        memory_id = made["memoryId"]
        records, blobs = c.adapters.records, c.adapters.blobs
        assert isinstance(records, MemoryRecordStore) and isinstance(blobs, MemoryBlobStore)
        before = (dict(records.rows), dict(blobs.items))
        secret.refusing = True

        with pytest.raises(Unavailable, match="secret"):
            c.erasure.erase("thoughtmcp_user", "xavier")

        assert (records.rows, blobs.items) == before  # no receipt, mark, row or byte changed
        assert c.erasure.recent() == []  # so nothing is left running, to resume half done

        secret.refusing = False
        receipt = c.erasure.erase("thoughtmcp_user", "xavier")

    assert receipt.status == "completed" and receipt.removed["memory_rows"] == 1
    assert c.thoughts.rows.get(brain.id, "xavier", [memory_id]) == {}


def test_a_receipt_keeps_a_keyed_digest_of_its_subject_no_dictionary_can_match(tmp_path: Path) -> None:
    """The receipt outlives the erasure: what it keeps of the subject is keyed with the store's
    secret, so a reader of the store holding a list of likely names cannot find the one erased."""
    receipts = {}
    for n, secret in enumerate([b"one store's secret, 32 bytes or more", b"another store's secret, as long"]):
        c = fake_container(tmp_path / str(n))
        store_secret = c.adapters.store_secret
        assert isinstance(store_secret, FakeStoreSecret)
        store_secret.secret = secret
        with access.as_system():
            brain = c.brains.create("Team", slug="team", metadata={BRAIN_MARK: True})
            c.thoughts.remember(
                brain,
                NewMemory(content="Xavier likes tea.", user_id="xavier", session_id="s1", sector="semantic"),
            )
            receipts[n] = c.erasure.erase("thoughtmcp_user", "xavier")
            assert c.erasure.recent()[0].subject_digest == receipts[n].subject_digest  # as kept

    plain = hashlib.sha256(b"thoughtmcp_user\x00xavier").hexdigest()
    digests = {r.subject_digest for r in receipts.values()}
    assert len(digests) == 2 and all(len(d) == 16 and d not in plain for d in digests)
