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
from cairn.services.repositories import from_item
from tests.contract.aws_storage import dynamodb_records

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
