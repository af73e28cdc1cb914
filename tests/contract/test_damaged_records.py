"""A record changed outside Cairn (its JSON cut short, an item of the table written by something
else, a document record that no longer holds a document) is refused as `damaged_store` wherever
it is read, on SQLite and on DynamoDB: a clear 503 naming the record, never a crash (500) with a
JSONDecodeError or KeyError traceback."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.domain.errors import DamagedStore
from cairn.domain.models import Document
from cairn.ports.records import Item, RecordStore
from cairn.services.brain_slugs import pointed
from cairn.services.gbrain.raw_data import RawDataService
from cairn.services.gbrain.raw_data import _pk as raw_pk
from cairn.services.links.repository import _numbered
from cairn.services.mnemosyne.collection_records import _row as _collection
from cairn.services.mnemosyne.item_status import _pending
from cairn.services.repositories import SessionRepository, from_item, session_key
from cairn.services.search.access import _stored
from cairn.services.thoughtmcp.rows import row_of
from tests.contract.aws_storage import dynamodb_records
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_container
from tests.fakes.records import MemoryRecordStore

PK = "brain#b1"
Damage = Callable[[str, Any], None]
"""Writes a raw row under (PK, sort key) as the backend holds it, bypassing the adapter."""


@pytest.fixture(params=["sqlite", "dynamodb"])
def damaged(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[RecordStore, dict[str, Damage]]]:
    if request.param == "sqlite":
        store = SqliteRecordStore(tmp_path / "records.sqlite3")
        store.put(Item(PK, "doc#ok.md", {"n": 1}))

        def row(sk: str, data: Any) -> None:
            with sqlite3.connect(tmp_path / "records.sqlite3") as conn:
                conn.execute("INSERT INTO items VALUES (?, ?, ?, 1)", (PK, sk, data))

        yield (
            store,
            {"not JSON": lambda sk, _: row(sk, "{cut sho"), "not an object": lambda sk, _: row(sk, "[1, 2]")},
        )
        return
    with dynamodb_records(request) as dynamo:
        dynamo.put(Item(PK, "doc#ok.md", {"n": 1}))

        def item(sk: str, attributes: dict[str, Any]) -> None:
            raw = {"pk": {"S": PK}, "sk": {"S": sk}, "v": {"N": "1"}, **attributes}
            dynamo.client.put_item(TableName=dynamo.table, Item=raw)

        yield (
            dynamo,
            {
                "not JSON": lambda sk, _: item(sk, {"d": {"S": "{cut sho"}}),
                "not an object": lambda sk, _: item(sk, {"d": {"S": "[1, 2]"}}),
                "no data": lambda sk, _: item(sk, {}),
                "data a number": lambda sk, _: item(sk, {"d": {"N": "5"}}),
            },
        )


def test_a_damaged_record_is_refused_as_damaged_wherever_it_is_read(
    damaged: tuple[RecordStore, dict[str, Damage]],
) -> None:
    store, damages = damaged
    for n, (what, damage) in enumerate(damages.items()):
        sk = f"doc#bad{n}.md"
        damage(sk, None)
        reads: list[Callable[[str], object]] = [
            lambda key: store.get(PK, key),
            lambda key: store.get_many([(PK, key), (PK, "doc#ok.md")]),
            lambda _: store.query(PK, "doc#"),
            lambda _: store.scan(["brain#"]),
        ]
        for read in reads:
            with pytest.raises(DamagedStore, match=re.escape(f"{PK} {sk}")) as refused:
                read(sk)
            assert "Traceback" not in str(refused.value), what
        assert store.get(PK, "doc#ok.md") == Item(PK, "doc#ok.md", {"n": 1}, 1)  # the rest reads as before
        store.delete(PK, sk)


def test_a_record_that_no_longer_holds_its_model_is_damaged() -> None:
    with pytest.raises(DamagedStore, match=re.escape("doc#a.md: it is not a Document")):
        from_item(Document, Item(PK, "doc#a.md", {"path": 7}))


@pytest.mark.parametrize(
    ("what", "decode"),
    [
        ("ThoughtMCP memory", lambda item: row_of(item)),
        ("link", lambda item: _numbered("b1", item)),
        ("read count", lambda item: _stored(item)),
        ("slug's brain", lambda item: pointed(MemoryRecordStore(), item)),
        ("collection", lambda item: _collection(item)),
        ("pending item", lambda item: _pending("b1", item)),
    ],
)
def test_a_record_decoded_field_by_field_that_lacks_its_fields_is_damaged(
    what: str, decode: Callable[[Item], object]
) -> None:
    """Valid JSON that no longer holds the record (a field gone, one of another kind) crashed with
    a KeyError as an internal error (500) on ThoughtMCP recall, gbrain backlinks, zengram search,
    every request naming a brain by slug, and Mnemosyne's collections and item status."""
    for data in ({"brain": {"id": 7}, "created_at": "not a time"}, {"count": "x", "last": 5}):
        with pytest.raises(DamagedStore, match=re.escape(f"{PK} doc#x: it is not a {what}")):
            decode(Item(PK, "doc#x", data))


def test_a_session_or_raw_data_record_that_lacks_its_fields_is_damaged() -> None:
    records = MemoryRecordStore()
    records.put(Item(*session_key("s1"), {"session": {"id": 1}}))
    with pytest.raises(DamagedStore, match="it is not a session"):
        SessionRepository(records).get("s1")
    brain = fake_container().brains.create("B", slug="b")
    raw = RawDataService(records, MemoryBlobStore(), FakeClock())
    records.put(Item(raw_pk(brain.id, "d1"), "src#crm", {"id": 1, "stored_at": "yesterday"}))
    with pytest.raises(DamagedStore, match="it is not a raw data record"):
        raw.get(brain, "d1", "crm")
