"""A prototype measured before building it: each chunk's vector-leg similarity lifted by vectors of
the chunk embedded with its neighbours (the item stored before it and the one after it), on LoCoMo
dev and on the relevance fixtures, through the in-process search (docs/RELEVANCE.md, "What is not
done yet").

The two extra vectors of each chunk are held beside the store, and `VectorFile.similarities` is
wrapped so a chunk's similarity is its own cosine plus `--lam` times how far its best neighbour
vector is above it (1: the best of the three). The keyword leg and the calibrated relevance (the
chunk's own cosine) are untouched. Prints recall@10 / MRR@10 with and without the lift:

    python bench/neighbour_vectors.py --locomo locomo-dev.json [--lam 0.5]
    python bench/neighbour_vectors.py --fixture bench/data/relevance/team_memory.json [--lam 0.5]

LoCoMo neighbours are the turns before and after in the same session; a fixture item's are the
items stored before and after it (the fixture's order), canonical `memory_search`'s brain.

`--text` says what a LoCoMo neighbour vector embeds (the fixtures always embed title and texts):
- `speaker` (the default): the turn's title, then `speaker: text` of both turns;
- `stored`: the turn's title, then both turns' stored text (`date — speaker: text`), which is all
  a server holds of them;
- `shared`: both turns' stored text and no title, one embedding per adjacent pair that serves as
  the "after" vector of the first and the "before" vector of the second (two embeddings a turn);
- `mixed`: no embedding at all, the unit sum of the turn's stored vector and `--mix` times its
  neighbour's.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_data as h
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import vector_store
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from relevance_surfaces import load_fixture

Lifts = dict[str, tuple[np.ndarray, np.ndarray]]  # vector file → (rows × 2 × dim, rows × 2 present)


def neighbour_vectors(
    container: Any,
    data_dir: Path,
    brain: Brain,
    texts: dict[str, tuple[str | None, str | None]],
    mix: float | None = None,
) -> Lifts:
    """For each path: (text with the item before, text with the item after), embedded per chunk row.
    With `mix`, the two texts are the neighbours' paths instead, and each vector is the unit sum of
    the chunk's stored vector and `mix` times the neighbour's first chunk's."""
    with sqlite3.connect(f"file:{data_dir}/chunks.sqlite3?mode=ro", uri=True) as conn:
        epoch = schema.vector_epoch(conn, brain.id)
        rows = conn.execute(
            "SELECT path, vec_row FROM chunks WHERE brain_id = ? AND active = 1 ORDER BY vec_row",
            (brain.id,),
        ).fetchall()
    vectors = container.adapters.chunks._vectors.file(brain.id, epoch)  # the prototype reaches in
    size = max(row for _, row in rows) + 1
    matrix = np.zeros((size, 2, container.adapters.embedder.dimension), dtype=np.float32)
    present = np.zeros((size, 2), dtype=bool)
    if mix is not None:
        own = vectors.read(np.arange(size))
        first: dict[str, int] = {}
        for path, row in rows:
            first.setdefault(path, row)
        for path, row in rows:
            for side, near in enumerate(texts.get(path, (None, None))):
                if near is not None and near in first:
                    summed = own[row] + mix * own[first[near]]
                    matrix[row, side], present[row, side] = summed / np.linalg.norm(summed), True
        return {str(vectors.path): (matrix, present)}
    wanted, where = [], []
    for path, row in rows:
        for side, text in enumerate(texts.get(path, (None, None))):
            if text is not None:
                wanted.append(text)
                where.append((row, side))
    distinct = list(dict.fromkeys(wanted))  # `shared`: a pair's text is embedded once for both turns
    embedded = dict(zip(distinct, container.adapters.embedder.embed(distinct), strict=True))
    for (row, side), text in zip(where, wanted, strict=True):
        matrix[row, side], present[row, side] = embedded[text], True
    return {str(vectors.path): (matrix, present)}


def turn_texts(turn: Any, before: Any, after: Any, text: str) -> tuple[str | None, str | None]:
    """A LoCoMo turn's two neighbour texts as `--text` says (paths for `mixed`)."""
    if text == "mixed":
        return (before.path if before else None, after.path if after else None)
    if text == "shared":
        return (
            f"{before.content}\n{turn.content}" if before else None,
            f"{turn.content}\n{after.content}" if after else None,
        )
    line = (lambda t: t.content) if text == "stored" else (lambda t: f"{t.speaker}: {t.text}")
    return (
        f"{turn.title}\n\n{line(before)}\n{line(turn)}" if before else None,
        f"{turn.title}\n\n{line(turn)}\n{line(after)}" if after else None,
    )


@contextmanager
def lifted(lifts: Lifts, lam: float) -> Iterator[None]:
    plain = vector_store.VectorFile.similarities

    def similarities(self: vector_store.VectorFile, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        own = plain(self, rows, query)
        held = lifts.get(str(self.path))
        if held is None or rows.size == 0:
            return own
        matrix, present = held
        known = rows < matrix.shape[0]
        near = np.einsum("rkd,d->rk", matrix[rows[known]], query)
        near[~present[rows[known]]] = -2.0
        out = own.copy()
        out[known] += lam * np.maximum(0.0, near.max(axis=1) - own[known])
        return out

    vector_store.VectorFile.similarities = similarities  # type: ignore[method-assign]
    try:
        yield
    finally:
        vector_store.VectorFile.similarities = plain  # type: ignore[method-assign]


def scores(found: list[list[str]], relevant: list[set[str]]) -> str:
    recall = np.mean([len(r & set(f[:10])) / len(r) for f, r in zip(found, relevant, strict=True)])
    mrr = np.mean(
        [
            next((1 / (k + 1) for k, x in enumerate(f[:10]) if x in r), 0.0)
            for f, r in zip(found, relevant, strict=True)
        ]
    )
    return f"recall@10 {recall:.3f}  MRR@10 {mrr:.3f}"


def on_fixture(path: Path, lam: float) -> None:
    items, queries = load_fixture(path)
    data = Path(tempfile.mkdtemp(prefix="cairn-neighbours-"))
    container = build_container(Settings(data_dir=data))
    brain = container.brains.create("Fixture", slug="fixture")
    item_of, texts = {}, {}
    for i, item in enumerate(items):
        doc = container.ingest.remember(brain, item.text, title=item.title, tags=list(item.tags))
        item_of[doc.path] = item.id
        before = items[i - 1] if i > 0 else None
        after = items[i + 1] if i + 1 < len(items) else None
        texts[doc.path] = (
            f"{item.title}\n\n{before.text}\n{item.text}" if before else None,
            f"{item.title}\n\n{item.text}\n{after.text}" if after else None,
        )
    asked = [q for q in queries if q.relevant]

    def run() -> list[list[str]]:
        out = []
        for q in asked:
            hits = container.search.search(brain, q.text, top_k=10, count_access=False).hits
            out.append(list(dict.fromkeys(item_of[hit.path] for hit in hits if hit.path in item_of)))
        return out

    relevant = [set(q.relevant) for q in asked]
    print(f"{path.stem}: plain {scores(run(), relevant)}", flush=True)
    with lifted(neighbour_vectors(container, data, brain, texts), lam):
        print(f"{path.stem}: neighbours x {lam} {scores(run(), relevant)}", flush=True)


def on_locomo(path: Path, lam: float, text: str = "speaker", mix: float = 1.0) -> None:
    conversations = h.load_conversations(path)
    data = Path(tempfile.mkdtemp(prefix="cairn-neighbours-"))
    container = build_container(Settings(data_dir=data))
    lifts: Lifts = {}
    brains = {}
    for conv in conversations:
        brain = container.brains.create(f"LoCoMo {conv.sample_id}", slug=conv.slug)
        brains[conv.slug] = brain
        texts = {}
        for i, turn in enumerate(conv.turns):
            container.ingest.remember(brain, turn.content, title=turn.title, tags=turn.tags, path=turn.path)
            session = turn.dia_id.split(":")[0]
            near = [conv.turns[j] if 0 <= j < len(conv.turns) else None for j in (i - 1, i + 1)]
            before, after = (t if t is not None and t.dia_id.split(":")[0] == session else None for t in near)
            texts[turn.path] = turn_texts(turn, before, after, text)
        lifts.update(neighbour_vectors(container, data, brain, texts, mix if text == "mixed" else None))

    def run(name: str) -> None:
        rec = h.RunRecorder(system=name, data_path=path, top_k=10)
        for conv in conversations:
            rec.add_ingest(conv, 0.0)
            mapper = rec.mapper(conv)
            for q in conv.questions:
                hits = container.search.search(brains[conv.slug], q.question, top_k=10).hits
                rec.add_question(q, [mapper.map_hit(hit.path, hit.content) for hit in hits], 0.0)
        print(f"LoCoMo dev, {name}: {h.summary_line(rec.report())}", flush=True)

    run("plain")
    with lifted(lifts, lam):
        run(f"neighbours ({text}) x {lam}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=None)
    parser.add_argument("--fixture", type=Path, action="append", default=[])
    parser.add_argument("--lam", type=float, default=0.5)
    parser.add_argument("--text", choices=("speaker", "stored", "shared", "mixed"), default="speaker")
    parser.add_argument("--mix", type=float, default=1.0, help="with --text mixed: the neighbour's weight")
    args = parser.parse_args()
    if args.locomo is None and not args.fixture:
        parser.error("give --locomo and/or --fixture")
    for fixture in args.fixture:
        on_fixture(fixture, args.lam)
    if args.locomo is not None:
        on_locomo(args.locomo, args.lam, args.text, args.mix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
