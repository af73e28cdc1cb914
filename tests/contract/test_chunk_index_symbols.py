"""A word written against a symbol (an emoji, ™, ✅, a skin tone) is found by that word on every
chunk index: the fake, SQLite (whose tokenizer is told to split at the symbols its Unicode tables
are too old to know, adapters/local/fts_separators.py) and OpenSearch (its fake's analyser, and a
live cluster when OPENSEARCH_URL is set). Words beside no symbol are found as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.ports.chunks import ChunkIndex
from tests.contract.aws_opensearch import opensearch_chunks
from tests.contract.test_chunk_index_contract import DIM, axis, chunk, search
from tests.fakes.chunks import MemoryChunkIndex
from tests.unit.aws.test_opensearch_fake import FakeCluster, fake_client

NOTES = {
    "hug": "thanks🤗 for the review",
    "hug-first": "🤗thanks again, Mira",
    "hands": "kudos🙌 to the night shift",
    "check": "migration done✅ before noon",
    "mark": "the Zentrix™ gateway rebooted",
    "tone": "waved👋🏽hello from the dock",
    "brain": "memory🧠palace drills",
    "heat": "the kiln held 1200 °C",
    "accent": "a naïve café order",
    "cjk": "東京タワー closes early",
    "plain": "the harbour crane is idle",
}


@pytest.fixture(params=["memory", "sqlite", "opensearch-fake", "opensearch"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChunkIndex]:
    if request.param == "opensearch":  # a real cluster: skipped unless OPENSEARCH_URL is set
        with opensearch_chunks(request) as live:
            yield live
        return
    if request.param == "sqlite":
        opened = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
        yield opened
        opened.close()
        return
    yield (
        MemoryChunkIndex(DIM)
        if request.param == "memory"
        else OpenSearchChunkIndex(fake_client(FakeCluster()), DIM)
    )


@pytest.fixture
def filled(index: ChunkIndex) -> ChunkIndex:
    index.upsert(
        [chunk(cid, text) for cid, text in NOTES.items()], np.stack([axis(i) for i in range(len(NOTES))])
    )
    return index


@pytest.mark.parametrize(
    ("words", "found"),
    [
        ("thanks", ["hug", "hug-first"]),
        ("kudos", ["hands"]),
        ("done", ["check"]),
        ("Zentrix", ["mark"]),
        ("hello", ["tone"]),
        ("waved", ["tone"]),
        ("palace", ["brain"]),
        ("memory", ["brain"]),
        ("1200", ["heat"]),
        ("cafe naive", ["accent"]),
        ("東京タワー", ["cjk"]),
        ("crane", ["plain"]),
    ],
)
def test_a_word_against_a_symbol_is_found_by_the_word(
    filled: ChunkIndex, words: str, found: list[str]
) -> None:
    assert sorted(search(filled, words)) == found


def test_a_query_with_the_symbol_against_its_word_finds_the_word(filled: ChunkIndex) -> None:
    assert sorted(search(filled, "thanks🤗")) == ["hug", "hug-first"]
    assert search(filled, "🧠palace") == ["brain"]
