"""What the one-time rebuild of a keyword index made with the earlier tokenizer costs
(adapters/local/fts_retokenize.py), and what the symbol separators cost the index and its queries.

Builds one brain of synthetic chunks as bench/chunk_index_100k.py does, one word in 20 written
against an emoji (half of them newer than SQLite's Unicode tables, "word🤗"), remakes its FTS5
table with the earlier tokenizer, and times the open that rebuilds it (rows copied, term postings
made again), then an open with nothing to rebuild. Then FTS5 alone: the same texts inserted into a
bare table of each tokenizer, and 300 queries against each.

    .venv/bin/python bench/retokenize_100k.py                 # 100k chunks
    .venv/bin/python bench/retokenize_100k.py --chunks 10000
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from chunk_index_100k import BRAIN, Corpus, build

OLD_TOKENIZER = "porter unicode61 remove_diacritics 2"
EMOJI = ["🎉", "👍", "🙌", "✅", "❤", "🚀", "🤗", "🥳", "🧠", "🤖", "🦀", "🫠", "🤣", "👋🏽"]


class EmojiCorpus(Corpus):
    def text(self, count: int) -> str:
        words = super().text(count).split(" ")
        for i in range(0, len(words), 20):
            words[i] += EMOJI[int(self.rng.integers(len(EMOJI)))]
        return " ".join(words)


def age(db: Path) -> None:
    """Remake the brain's FTS5 table with the earlier tokenizer, as a version before wrote it."""
    conn = sqlite3.connect(db, isolation_level=None)
    (seq,) = conn.execute("SELECT seq FROM brain_state WHERE brain_id = ?", (BRAIN,)).fetchone()
    table = schema.fts_table(seq)
    conn.execute("BEGIN")
    conn.execute(f"CREATE VIRTUAL TABLE aged USING fts5(title, text, context, tokenize='{OLD_TOKENIZER}')")
    conn.execute(f"INSERT INTO aged (rowid, title, text, context) SELECT rowid, * FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE aged RENAME TO {table}")
    conn.execute("COMMIT")
    conn.execute("VACUUM")
    conn.close()


def opened(tmp: Path, dim: int) -> float:
    started = time.perf_counter()
    SqliteChunkIndex(tmp / "chunks.db", tmp / "vectors", dim, background_maintenance=False).close()
    return time.perf_counter() - started


def bare_tables(texts: list[str], questions: list[str]) -> None:
    """Insert the texts into a bare FTS5 table of each tokenizer and run the questions' words."""
    for label, tokenizer in (("earlier", OLD_TOKENIZER), ("today's", schema.TOKENIZER)):
        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{tokenizer}')")
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t (text) VALUES (?)", [(t,) for t in texts])
        conn.execute("COMMIT")
        insert = time.perf_counter() - started
        ms = []
        for question in questions:
            words = " OR ".join(f'"{w}"' for w in question.split()[2:-1])
            started = time.perf_counter()
            conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10", (words,)).fetchall()
            ms.append((time.perf_counter() - started) * 1000)
        p50, p95 = np.percentile(ms, [50, 95])
        print(f"bare FTS5, {label} tokenizer: insert {insert:.1f} s; query p50 {p50:.2f} ms p95 {p95:.2f} ms")
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    corpus = EmojiCorpus(np.random.default_rng(args.seed))
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        index = SqliteChunkIndex(tmp / "chunks.db", tmp / "vectors", args.dim, background_maintenance=False)
        print(f"built {args.chunks:,} chunks in {build(index, corpus, args.chunks, args.dim):.1f} s")
        index.close()
        age(tmp / "chunks.db")
        print(f"open that rebuilds the keyword index: {opened(tmp, args.dim):.1f} s")
        print(f"open with nothing to rebuild: {opened(tmp, args.dim):.2f} s")
        conn = sqlite3.connect(tmp / "chunks.db")
        texts = [t for (t,) in conn.execute(f"SELECT text FROM {schema.fts_table(1)}")]
        conn.close()
    bare_tables(texts, [corpus.question() for _ in range(300)])


if __name__ == "__main__":
    main()
