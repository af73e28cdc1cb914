"""The BM25 leg's top `pool` equals ranking every match with FTS5's bm25() (ids, scores, ties by
rowid), with very common and rare terms mixed and with a filter on the chunk rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np
import pytest

from cairn.adapters.local.chunk_schema import TOKENIZER
from cairn.adapters.local.fts_query import or_expression
from cairn.adapters.local.fts_search import bm25_ranked, minimal_sets, ranked_matches, row_count, upper_bound

WEIGHTS = (2.0, 1.0, 0.5)
ROWS = 20_000
TABLE = "chunks_fts_1"


def _words(rng: np.random.Generator, count: int) -> list[str]:
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    words: dict[str, None] = {}
    while len(words) < count:
        size = int(rng.integers(2, 4))
        words["".join(rng.choice(list(consonants)) + rng.choice(list(vowels)) for _ in range(size))] = None
    return list(words)


@pytest.fixture(scope="module")
def corpus() -> Iterator[tuple[sqlite3.Connection, list[str], np.ndarray]]:
    """20,000 rows of Zipf text over 3,000 words (the top ones in most rows), titles and a
    sparse context column, and a `chunks` table with a group number to filter on."""
    rng = np.random.default_rng(11)
    vocabulary = np.array(_words(rng, 3_000))
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.1
    cdf = np.cumsum(weights) / weights.sum()

    def text(count: int) -> str:
        return " ".join(vocabulary[np.searchsorted(cdf, rng.random(count))].tolist())

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING fts5(title, text, context, tokenize='{TOKENIZER}')")
    conn.execute("CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, grp INTEGER NOT NULL)")
    rows = [
        (n, text(4), text(int(rng.integers(5, 120))), text(10) if n % 7 == 0 else "")
        for n in range(1, ROWS + 1)
    ]
    conn.executemany(f"INSERT INTO {TABLE} (rowid, title, text, context) VALUES (?, ?, ?, ?)", rows)
    conn.executemany(
        "INSERT INTO chunks (rowid, grp) VALUES (?, ?)", [(n, n % 10) for n in range(1, ROWS + 1)]
    )
    conn.execute(f"DELETE FROM {TABLE} WHERE rowid % 97 = 0")  # deleted rows must not count
    conn.commit()
    yield conn, vocabulary.tolist(), cdf
    conn.close()


def _reference(
    conn: sqlite3.Connection, terms: list[str], condition: tuple[str, list[object]] | None, pool: int
):
    return ranked_matches(conn, TABLE, WEIGHTS, [f"{TABLE} MATCH ?"], [or_expression(terms)], condition, pool)


def _queries(vocabulary: list[str], seed: int, count: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    queries = []
    for _ in range(count):
        common = rng.choice(30, size=int(rng.integers(0, 4)), replace=False)  # in most rows
        middle = rng.choice(np.arange(30, 600), size=int(rng.integers(0, 3)), replace=False)
        rare = rng.choice(np.arange(600, len(vocabulary)), size=int(rng.integers(0, 3)), replace=False)
        picks = [vocabulary[int(i)] for i in np.concatenate([common, middle, rare])]
        rng.shuffle(picks)
        queries.append(picks or [vocabulary[0], vocabulary[1]])
    return queries


@pytest.mark.parametrize("pool", [10, 100])
def test_top_pool_equals_ranking_every_match(corpus, pool: int) -> None:
    conn, vocabulary, _cdf = corpus
    for terms in _queries(vocabulary, seed=pool, count=40):
        assert bm25_ranked(conn, TABLE, terms, WEIGHTS, None, pool) == _reference(conn, terms, None, pool), (
            terms
        )


@pytest.mark.parametrize(
    "condition", [("c.grp = ?", [3]), ("c.grp IN (?, ?) AND c.rowid > ?", [1, 2, 5_000])]
)
def test_top_pool_is_taken_after_the_filter(corpus, condition: tuple[str, list[object]]) -> None:
    conn, vocabulary, _cdf = corpus
    for terms in _queries(vocabulary, seed=5, count=30):
        got = bm25_ranked(conn, TABLE, terms, WEIGHTS, condition, 100)
        assert got == _reference(conn, terms, condition, 100), terms


def test_common_terms_alone_and_with_a_rare_one_are_exact(corpus) -> None:
    # The cases a posting budget got wrong: the most common words, with and without a rare word
    conn, vocabulary, _cdf = corpus
    for terms in (
        vocabulary[:2],
        vocabulary[:4],
        [vocabulary[2999], *vocabulary[:3]],
        [vocabulary[0], vocabulary[900]],
    ):
        assert bm25_ranked(conn, TABLE, terms, WEIGHTS, None, 100) == _reference(conn, terms, None, 100), (
            terms
        )


def test_a_term_contributes_less_than_its_bound(corpus) -> None:
    # Each single-term bm25() score, whatever its column weights, stays below the bound
    conn, vocabulary, _cdf = corpus
    rows = row_count(conn, TABLE)
    assert rows == conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
    for word in (vocabulary[0], vocabulary[40], vocabulary[2500]):
        df = conn.execute(f"SELECT count(*) FROM {TABLE} WHERE {TABLE} MATCH ?", (f'"{word}"',)).fetchone()[0]
        for weights in (WEIGHTS, (10.0, 10.0, 10.0)):
            best = _reference_weighted(conn, word, weights)
            assert 0 < best < upper_bound(rows, df)


def _reference_weighted(conn: sqlite3.Connection, word: str, weights: tuple[float, float, float]) -> float:
    return ranked_matches(conn, TABLE, weights, [f"{TABLE} MATCH ?"], [f'"{word}"'], None, 1)[0][1]


def test_minimal_sets_are_the_smallest_term_sets_reaching_the_threshold() -> None:
    sets = minimal_sets([5.0, 3.0, 2.0, 1.0], 6.0)
    assert sets is not None
    assert sorted(sorted(s) for s in sets) == [[0, 1], [0, 2], [0, 3], [1, 2, 3]]
