"""A library's collections as stored (services/mnemosyne/collection_records.py) on every record
store: one name per library whatever its case, found by uid through its pointer and by name, and
the pointers a library's deletion removes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.domain.errors import Conflict
from cairn.ports.records import RecordStore
from cairn.services.mnemosyne.collection_records import CollectionRecords, CollectionRow

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def row(uid: str, name: str) -> CollectionRow:
    return CollectionRow(uid, name, f"about {name}", f"collections/{name.lower()}", T0)


def test_a_name_is_taken_once_per_library_whatever_its_case(records: RecordStore) -> None:
    store = CollectionRecords(records)
    store.create("brn_1", row("col_1", "Recipes"))
    with pytest.raises(Conflict):
        store.create("brn_1", row("col_2", "RECIPES"))
    store.create("brn_2", row("col_3", "Recipes"))  # another library may

    assert [r.uid for r in store.of("brn_1")] == ["col_1"]  # the refused one left nothing
    assert store.library_of("col_2") is None
    assert store.named("brn_1", "recipes") == row("col_1", "Recipes")
    assert store.named("brn_1", "Travel") is None


def test_found_by_uid_through_its_pointer_and_its_pointers_listed(records: RecordStore) -> None:
    store = CollectionRecords(records)
    store.create("brn_1", row("col_1", "Recipes"))
    store.create("brn_1", row("col_2", "Travel"))

    assert store.library_of("col_2") == "brn_1"
    assert store.get("brn_1", "col_2") == row("col_2", "Travel")
    assert store.get("brn_2", "col_2") is None
    assert store.library_of("not-a-collection") is None and store.library_of("col_none") is None
    assert sorted(r.name for r in store.of("brn_1")) == ["Recipes", "Travel"]
    assert sorted((i.pk, i.sk) for i in store.pointers("brn_1")) == [
        ("colid#col_1", "collection"),
        ("colid#col_2", "collection"),
    ]
