"""Paging through a partition of the embedded record store costs each page the same: a page
after `after` starts where `after` is, not at the prefix's first row."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.ports.records import Item, Put
from tests.support.sqlite_steps import steps

PK = "brain#b"


def _steps(store: SqliteRecordStore, after: str | None, descending: bool) -> int:
    """The SQLite virtual machine's steps (in hundreds) one query takes on this thread's connection."""
    return steps(
        store._conn(), lambda: store.query(PK, "doc#m/", after=after, limit=100, descending=descending), 100
    )[0]


@pytest.mark.parametrize("descending", [False, True])
def test_a_late_page_costs_what_the_first_does(tmp_path: Path, descending: bool) -> None:
    store = SqliteRecordStore(tmp_path / "records.sqlite3")
    sks = [f"doc#m/{n:05d}" for n in range(6_000)]
    for start in range(0, len(sks), 90):
        store.transact([Put(Item(PK, sk, {"text": "x" * 200})) for sk in sks[start : start + 90]])
    store.transact([Put(Item(PK, sk, {})) for sk in ("cur#a", "doc#l", "doc#n")])  # around the prefix
    first = _steps(store, None, descending)
    late_after = sks[100] if descending else sks[-101]
    late = _steps(store, late_after, descending)
    page = store.query(PK, "doc#m/", after=late_after, limit=100, descending=descending).items
    assert [i.sk for i in page] == (sks[99::-1] if descending else sks[-100:])
    assert late <= first * 2 + 2, (first, late)
