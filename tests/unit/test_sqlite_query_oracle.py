"""The embedded record store's query (one bound a side of the key range) answers as a brute-force
filter of the partition does, for random keys, prefixes (empty, ending in U+10FFFF, beside the
surrogate block), `after` inside, below and above the prefix's range, either order and any limit,
and paging to the end returns every key once."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.ports.records import Item, Put

PK = "brain#b"
_CHARS = st.sampled_from(["a", "b", "#", "/", "\x00", "é", "\ud7ff", "\ue000", "\uffff", "\U0010ffff"])
_KEYS = st.text(_CHARS, min_size=1, max_size=4)
_PREFIXES = st.text(_CHARS, max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sks=st.sets(_KEYS, max_size=25),
    prefix=_PREFIXES,
    after=st.one_of(st.none(), st.text(_CHARS, max_size=4)),
    descending=st.booleans(),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=6)),
)
def test_a_query_answers_as_a_filter_of_the_partition(
    tmp_path_factory: pytest.TempPathFactory,
    sks: set[str],
    prefix: str,
    after: str | None,
    descending: bool,
    limit: int | None,
) -> None:
    store = SqliteRecordStore(tmp_path_factory.mktemp("records") / "records.sqlite3")
    try:
        if sks:
            store.transact([Put(Item(PK, sk, {})) for sk in sks])
        store.transact([Put(Item("brain#other", prefix + "a", {}))])  # another partition, same keys
        matching = sorted((sk for sk in sks if sk.startswith(prefix)), reverse=descending)
        if after is not None:
            matching = [sk for sk in matching if (sk < after if descending else sk > after)]
        page = store.query(PK, prefix, after=after, limit=limit, descending=descending)
        assert [item.sk for item in page.items] == matching[:limit]
        assert (page.next_after is not None) == (limit is not None and len(matching) > limit)
        paged, cursor = [], after  # paging on from each page's end reads each key once
        while True:
            page = store.query(PK, prefix, after=cursor, limit=limit or 1, descending=descending)
            paged += [item.sk for item in page.items]
            if page.next_after is None:
                break
            cursor = page.next_after
        assert paged == matching
    finally:
        store.close()
