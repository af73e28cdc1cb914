"""The BM25 leg's top `pool` equals ranking every match with FTS5's bm25() (ids, scores bit for
bit, ties by rowid), with very common and rare terms mixed, with a filter on the chunk rows,
after the term postings went through a migration, later inserts (the average row length
drifting), deletes and context rewrites, and for column weights other than 2 / 1 / 0.5."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np
import pytest

from cairn.adapters.local import fts_postings, fts_search
from cairn.adapters.local.chunk_schema import TAGS_AFTER, TOKENIZER
from cairn.adapters.local.fts_postings import CAP, PostingsWriter
from cairn.adapters.local.fts_query import STOPWORDS, or_expression
from cairn.adapters.local.fts_search import bm25_ranked, ranked_matches
from cairn.adapters.local.fts_tokens import POSTING, TOKENS

WEIGHTS = (2.0, 1.0, 0.5)
ROWS = 20_000
TABLE = "chunks_fts_1"


def _words(rng: np.random.Generator, count: int) -> list[str]:
    """Made-up words, none of them stemming like a stopword (those are ranked by FTS5)."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    stop = {token for word in STOPWORDS for token in TOKENS.of_term(word)}
    words: dict[str, None] = {}
    while len(words) < count:
        size = int(rng.integers(2, 4))
        word = "".join(rng.choice(list(consonants)) + rng.choice(list(vowels)) for _ in range(size))
        if not stop.intersection(TOKENS.of_term(word)):
            words[word] = None
    return list(words)


@pytest.fixture(scope="module")
def corpus() -> Iterator[tuple[sqlite3.Connection, list[str]]]:
    """20,000 rows of Zipf text over 3,000 words (the top ones in most rows), titles and a
    sparse context column (a third of the titles followed by tag words, as chunk_schema.fts_title
    writes them), and a `chunks` table with a group number to filter on. The first
    8,000 rows predate the postings (filled by the migration); the rest arrive in batches
    of growing length, so the average row length drifts well above the one the first bounds
    were computed with; then rows are deleted and contexts rewritten."""
    rng = np.random.default_rng(11)
    vocabulary = np.array(_words(rng, 3_000))
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.1
    cdf = np.cumsum(weights) / weights.sum()

    def text(count: int) -> str:
        return " ".join(vocabulary[np.searchsorted(cdf, rng.random(count))].tolist())

    def row(n: int) -> tuple[int, str, str, str]:
        longest = 120 if n <= 8_000 else 120 + (n - 8_000) // 40
        title = text(4) + (f"{TAGS_AFTER}{text(2)}" if n % 3 == 0 else "")  # a third with tag words
        return n, title, text(int(rng.integers(5, longest))), text(10) if n % 7 == 0 else ""

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING fts5(title, text, context, tokenize='{TOKENIZER}')")
    conn.execute("CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, grp INTEGER NOT NULL)")
    insert = f"INSERT INTO {TABLE} (rowid, title, text, context) VALUES (?, ?, ?, ?)"
    conn.executemany(insert, [row(n) for n in range(1, 8_001)])
    fts_postings.ensure(conn, TABLE)  # the migration of a brain written before the postings
    for first in range(8_001, ROWS + 1, 3_000):
        writer = PostingsWriter(TABLE)
        for n, *texts in [row(n) for n in range(first, min(first + 3_000, ROWS + 1))]:
            conn.execute(insert, (n, *texts))
            writer.insert(n, (texts[0], texts[1], texts[2]))
        writer.apply(conn)
    conn.executemany(
        "INSERT INTO chunks (rowid, grp) VALUES (?, ?)", [(n, n % 10) for n in range(1, ROWS + 1)]
    )
    writer = PostingsWriter(TABLE)
    for n in range(97, ROWS + 1, 97):  # deleted rows must not count
        old = conn.execute(f"SELECT title, text, context FROM {TABLE} WHERE rowid = ?", (n,)).fetchone()
        conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (n,))
        writer.remove(n, old)
    for n in range(5, ROWS + 1, 211):  # a sibling's excerpt written later replaces the context
        if n % 97:
            old = conn.execute(f"SELECT title, text, context FROM {TABLE} WHERE rowid = ?", (n,)).fetchone()
            new = text(30)
            conn.execute(f"UPDATE {TABLE} SET context = ? WHERE rowid = ?", (new, n))
            writer.replace(n, old, (old[0], old[1], new))
    writer.apply(conn)
    conn.commit()
    yield conn, vocabulary.tolist()
    conn.close()


@pytest.fixture
def postings_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leg must answer from the term postings, not by ranking every match."""

    def refuse(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise AssertionError("ranked every match instead of the term postings")

    monkeypatch.setattr(fts_search, "ranked_matches", refuse)


def _reference(
    conn: sqlite3.Connection,
    terms: list[str],
    condition: tuple[str, list[object]] | None,
    pool: int,
    weights: tuple[float, float, float] = WEIGHTS,
):
    return ranked_matches(conn, TABLE, weights, [f"{TABLE} MATCH ?"], [or_expression(terms)], condition, pool)


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


@pytest.mark.parametrize("pool", [1, 10, 100])
def test_top_pool_equals_ranking_every_match(corpus, postings_only, pool: int) -> None:
    conn, vocabulary = corpus
    for terms in _queries(vocabulary, seed=pool, count=40):
        assert bm25_ranked(conn, TABLE, terms, WEIGHTS, None, pool) == _reference(conn, terms, None, pool), (
            terms
        )


@pytest.mark.parametrize(
    "condition",
    [("c.grp = ?", [3]), ("c.grp IN (?, ?) AND c.rowid > ?", [1, 2, 5_000]), ("c.rowid = ?", [17])],
)
def test_top_pool_is_taken_after_the_filter(
    corpus, postings_only, condition: tuple[str, list[object]]
) -> None:
    conn, vocabulary = corpus
    for terms in _queries(vocabulary, seed=5, count=30):
        got = bm25_ranked(conn, TABLE, terms, WEIGHTS, condition, 100)
        assert got == _reference(conn, terms, condition, 100), terms


@pytest.mark.parametrize("weights", [(0.3, 1.0, 0.7), (5.0, 3.0, 1.0), (1.0, 1.0, 1.0), (0.0, 1.0, 0.0)])
def test_other_column_weights_are_exact_too(
    corpus, postings_only, weights: tuple[float, float, float]
) -> None:
    # Weights other than the reference ones scale the bounds and, when not exact multiples,
    # make the weighted count the sum bm25() takes instance by instance
    conn, vocabulary = corpus
    for terms in _queries(vocabulary, seed=9, count=20):
        got = bm25_ranked(conn, TABLE, terms, weights, None, 50)
        assert got == _reference(conn, terms, None, 50, weights), (terms, weights)


def test_common_terms_alone_repeated_and_with_a_rare_one_are_exact(corpus) -> None:
    # The cases a posting budget got wrong: the most common words, with and without a rare word
    conn, vocabulary = corpus
    for terms in (
        vocabulary[:1],
        vocabulary[:2],
        vocabulary[:4],
        [vocabulary[2999], *vocabulary[:3]],
        [vocabulary[0], vocabulary[900]],
        [vocabulary[0], vocabulary[0], vocabulary[5]],  # a repeated term is two phrases in bm25()
        ["zzzzunknown", vocabulary[3]],
    ):
        assert bm25_ranked(conn, TABLE, terms, WEIGHTS, None, 100) == _reference(conn, terms, None, 100), (
            terms
        )


def test_postings_agree_with_the_fts5_index(corpus) -> None:
    # Each posting's length is FTS5's docsize total; each term's df is the rows FTS5 matches;
    # segments hold at most CAP postings, in rowid order
    conn, vocabulary = corpus
    postings = fts_postings.names(TABLE)[0]
    words = dict(
        conn.execute(
            f"SELECT rowid, length(title) - length(replace(replace(title, char(31), ' '), ' ', '')) + 1 + "
            f"length(text) - length(replace(text, ' ', '')) + 1 + "
            f"CASE context WHEN '' THEN 0 ELSE length(context) - length(replace(context, ' ', '')) + 1 END "
            f"FROM {TABLE}"
        ).fetchall()
    )
    assert conn.execute(f"SELECT count(*) FROM {TABLE}_docsize").fetchone()[0] == len(words)
    for word in (vocabulary[0], vocabulary[40], vocabulary[2500]):
        matched = [
            r for (r,) in conn.execute(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?", (f'"{word}"',))
        ]
        (token,) = TOKENS.of_term(word)
        segments = conn.execute(
            f"SELECT start, n, data FROM {postings} WHERE term = ? ORDER BY start", (token,)
        )
        records = []
        for start, n, data in segments:
            part = np.frombuffer(data, dtype=POSTING)
            assert len(part) == n <= CAP and int(part["rowid"][0]) == start
            records.append(part)
        joined = np.concatenate(records)
        assert joined["rowid"].tolist() == sorted(matched)
        assert joined["length"].tolist() == [words[r] for r in sorted(matched)]


def test_a_word_stemming_like_a_stopword_is_still_exact(corpus) -> None:
    # "doing" stems to "do", a stopword's token that gets no postings: FTS5 ranks it instead
    conn, vocabulary = corpus
    assert TOKENS.of_term("doing") == ("do",)
    terms = ["doing", vocabulary[3]]
    assert bm25_ranked(conn, TABLE, terms, WEIGHTS, None, 10) == _reference(conn, terms, None, 10)


def test_query_terms_are_tokenized_by_fts5() -> None:
    assert TOKENS.of_term("running") == ("run",)
    assert TOKENS.of_term("Café") == ("cafe",)
    assert TOKENS.of_term("e-mail") == ("e", "mail")  # a phrase: ranked by FTS5 instead


def test_rowids_too_spread_for_one_array_are_exact_too(corpus, postings_only, monkeypatch) -> None:
    conn, vocabulary = corpus
    monkeypatch.setattr(fts_search, "_DENSE_SPAN", 1)
    for terms in _queries(vocabulary, seed=21, count=15):
        assert bm25_ranked(conn, TABLE, terms, WEIGHTS, None, 20) == _reference(conn, terms, None, 20), terms
