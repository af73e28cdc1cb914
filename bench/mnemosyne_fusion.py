"""How Mnemosyne's search fuses its legs: RRF depth, the full-text floors and the leg weights.

Each corpus is written into a library of its type through IngestService (so the type's profile
cuts it and the concept graph links it), each query's three legs are run once as LibrarySearch
runs them (vector and full text POOL deep, with their similarities and BM25 scores; the graph
leg), and then every fusion setting is scored on those same legs:

- the eight relevance fixtures (bench/data/relevance/: team memory, a personal assistant, a
  maintainer's project, a lab, and the four written blind: freight, clinic, workshop, agency),
  each a `business` library as bench/relevance.py makes it, scored by item (recall@10, MRR@10
  over the queries that have answers);
- with --data, LoCoMo dev as one `journal` library (one item per dialogue session, as in
  bench/mnemosyne_locomo.py), scored by the evidence turns the chunks hold;
- the generated corpus of each library type (bench/data/profiles/<type>.json, written by
  bench/library_profiles.py), scored by the gold passages a chunk holds whole.

A setting is RRF (k = 60) over each leg's first `depth` hits, a full-text hit fused only when its
BM25 reaches `floor` x the query's best and (with `meaning`) its cosine with the query reaches
`meaning` x the vector leg's best, the vector leg weighted `vector` (None: the library type's
profile), full text 1.0, the graph leg GRAPH_WEIGHT. The first row fuses every hit of
every leg with the profile's weights, as Mnemosyne's search did before issue 28 (where the
business profile's vector weight was 0.2: that is the row "depth 100, floor 0.00, vector 0.2" for
the business corpora); the row marked * is what services/mnemosyne/library_search.py does.

    python bench/mnemosyne_fusion.py [--data locomo-dev.json] [--types business,journal,...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Chunk
from cairn.ingest.profiles import profile_for
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.mnemosyne.libraries import Library
from cairn.services.mnemosyne.library_search import (
    FULLTEXT_FLOOR,
    FULLTEXT_MEANING,
    GRAPH_WEIGHT,
    POOL,
    RRF_DEPTH,
    leg_weights,
    off_meaning,
    rrf_sums,
    weak_hits,
)
from cairn.services.search.relevance import cosines

HERE = Path(__file__).resolve().parent
FIXTURES = {
    "team": HERE / "data/relevance/team_memory.json",
    "assistant": HERE / "data/relevance/personal_assistant.json",
    "maintainer": HERE / "data/relevance/maintainer_memory.json",
    "lab": HERE / "data/relevance/lab_memory.json",
    "freight": HERE / "data/relevance/freight_memory.json",
    "clinic": HERE / "data/relevance/clinic_memory.json",
    "workshop": HERE / "data/relevance/workshop_memory.json",
    "agency": HERE / "data/relevance/agency_memory.json",
}
PROFILE_CORPORA = HERE / "data/profiles"
MARKER = re.compile(r"\[(D\d+:\d+)\]")


@dataclass
class Legs:
    vector: list[str]
    fulltext: list[tuple[str, float | None]]
    graph: list[str]
    cosine: dict[str, float]  # of the full-text hits (and the vector leg's), with the query
    best: float  # the vector leg's best cosine


@dataclass
class Corpus:
    name: str
    library_type: str
    queries: list[tuple[Legs, set[str]]]  # each query's legs and what answers it
    answers: dict[str, set[str]]  # chunk id -> what it holds (items, turns or passages)


@dataclass(frozen=True)
class Setting:
    depth: int
    floor: float
    vector: float | None = None  # None: the library type's profile weight
    meaning: float | None = None  # None: full-text hits are not judged by their cosine

    def __str__(self) -> str:
        weight = "profile" if self.vector is None else f"{self.vector:g}"
        meaning = "" if self.meaning is None else f", meaning {self.meaning:.2f}"
        return f"depth {self.depth:>3}, floor {self.floor:.2f}, vector {weight}{meaning}"


def legs_of(c: Container, library: Library, query: str) -> Legs:
    scope = ChunkFilter(brain_ids=(library.uid,))
    chunks = c.library_search.chunks
    vector = c.library_search.embedder.embed([query])[0].tolist()
    dense = chunks.search(ChunkQuery("", vector, scope, top_k=POOL, candidate_pool=POOL, bm25_weight=0.0))
    words = chunks.search(ChunkQuery(query, None, scope, top_k=POOL, candidate_pool=POOL, vector_weight=0.0))
    graph = c.library_search._graph_leg(query, scope)
    known = {h.chunk.id: h.vector_similarity for h in dense if h.vector_similarity is not None}
    return Legs(
        [h.chunk.id for h in dense],
        [(h.chunk.id, h.bm25_score) for h in words],
        [ch.id for ch in graph],
        cosines(chunks, vector, [h.chunk for h in words], known),
        max(known.values(), default=0.0),
    )


def new_library(c: Container, name: str, library_type: str) -> Library:
    brain = c.brains.create(name, slug=name)
    return c.libraries.describe(brain.id, library_type=library_type)


def chunks_found(c: Container, library: Library, queries: Sequence[Legs]) -> dict[str, Chunk]:
    ids = {cid for legs in queries for cid in [*legs.vector, *(i for i, _ in legs.fulltext), *legs.graph]}
    return c.library_search.chunks.get_many(library.uid, sorted(ids))


def fixture_corpus(c: Container, name: str, path: Path) -> Corpus:
    data = json.loads(path.read_text())
    library = new_library(c, name, "business")
    for item in data["items"]:
        text = f"# {item['title']}\n\n{item['text']}\n"
        c.ingest.ingest_bytes(
            library.brain, text.encode(), name=f"{item['id']}.md", path=f"{name}/{item['id']}.md"
        )
    asked = [(legs_of(c, library, q["text"]), set(q["relevant"])) for q in data["queries"] if q["relevant"]]
    found = chunks_found(c, library, [legs for legs, _ in asked])
    items = {cid: {Path(ch.path).stem} for cid, ch in found.items()}
    return Corpus(name, "business", asked, items)


def locomo_corpus(c: Container, data: Path) -> Corpus:
    import locomo_data as h
    import mnemosyne_locomo as ml

    conversations = h.load_conversations(data)
    library = ml.build(c, conversations)
    asked = [
        (legs_of(c, library, q.question), set(q.evidence)) for conv in conversations for q in conv.questions
    ]
    found = chunks_found(c, library, [legs for legs, _ in asked])
    return Corpus(
        "locomo", "journal", asked, {cid: set(MARKER.findall(ch.text)) for cid, ch in found.items()}
    )


def profile_corpus(c: Container, kind: str) -> Corpus:
    data = json.loads((PROFILE_CORPORA / f"{kind}.json").read_text())
    library = new_library(c, f"gen-{kind}", kind)
    for i, (_title, text) in enumerate(data["docs"]):
        c.ingest.ingest_bytes(library.brain, text.encode(), name=f"d{i}.md", path=f"docs/d{i}.md")
    asked = [(legs_of(c, library, q), set(gold)) for q, gold in data["queries"]]
    found = chunks_found(c, library, [legs for legs, _ in asked])
    passages = {pid: " ".join(text.split()) for pid, (_, text) in data["passages"].items()}
    flat = {cid: " ".join(ch.text.split()) for cid, ch in found.items()}
    return Corpus(
        kind, kind, asked, {cid: {p for p, pt in passages.items() if pt in t} for cid, t in flat.items()}
    )


def fused(legs: Legs, setting: Setting | None, library_type: str) -> list[str]:
    """The chunk ids in fused order, as LibrarySearch orders them under `setting` (`None`: the
    fusion before issue 28, every hit of every leg)."""
    weights = leg_weights(library_type)
    if setting is not None and setting.vector is not None:
        weights = {**weights, "vector": setting.vector}
    depth = POOL if setting is None else setting.depth
    weak = set() if setting is None else weak_hits(legs.fulltext, setting.floor)
    if setting is not None and setting.meaning is not None and legs.vector:
        head = [cid for cid, _ in legs.fulltext[:depth]]
        weak |= off_meaning(head, legs.cosine, legs.best, setting.meaning)
    ids = {"vector": legs.vector, "fulltext": [cid for cid, _ in legs.fulltext], "graph": legs.graph}
    head, whole = rrf_sums(ids, lambda leg, _: weights[leg], weak, depth)
    return sorted(whole, key=lambda cid: (-head.get(cid, 0.0), -whole[cid], cid))


def scored(corpus: Corpus, setting: Setting | None) -> tuple[float, float]:
    recall, mrr = [], []
    by_item = corpus.name in FIXTURES
    for legs, wanted in corpus.queries:
        top: list[set[str]] = []
        seen: set[str] = set()
        for cid in fused(legs, setting, corpus.library_type):
            held = corpus.answers.get(cid, set())
            if by_item:  # an item counts once, at its best chunk
                held = held - seen
                seen |= held
                if not held:
                    continue
            top.append(held)
            if len(top) == 10:
                break
        recall.append(len(wanted & set().union(*top)) / len(wanted))
        mrr.append(next((1.0 / r for r, held in enumerate(top, start=1) if held & wanted), 0.0))
    return sum(recall) / len(recall), sum(mrr) / len(mrr)


MEANINGS = (0.3, 0.4, 0.5, 0.55, 0.6, 0.7, 0.8)
SETTINGS: tuple[Setting, ...] = (
    *(
        Setting(depth, floor, vector)
        for vector in (None, 0.2, 1.0)
        for depth in (10, 20, 30, POOL)
        for floor in (0.0, 0.5, 0.6, 0.7, 0.8)
    ),
    *(Setting(RRF_DEPTH, floor, None, meaning) for floor in (0.0, FULLTEXT_FLOOR) for meaning in MEANINGS),
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo dev (locomo-dev.json)")
    parser.add_argument("--types", default=",".join(sorted(p.stem for p in PROFILE_CORPORA.glob("*.json"))))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cairn-fusion-") as tmp:
        c = build_container(Settings(data_dir=Path(tmp)))
        corpora = [fixture_corpus(c, name, path) for name, path in FIXTURES.items()]
        if args.data is not None:
            corpora.append(locomo_corpus(c, args.data))
        corpora += [profile_corpus(c, kind) for kind in args.types.split(",") if kind]
    asked = sum(len(k.queries) for k in corpora)
    print(f"legs of {asked} queries in {time.perf_counter() - started:.0f} s")
    weights = ", ".join(f"{k.name} {profile_for(k.library_type).vector_weight:g}" for k in corpora)
    print(f"graph leg weight {GRAPH_WEIGHT}; vector weights by profile: {weights}")
    chosen = Setting(RRF_DEPTH, FULLTEXT_FLOOR, None, FULLTEXT_MEANING)
    print(f"{'setting':<53}" + "".join(f"{k.name[:11]:>13}" for k in corpora) + "   (recall@10/MRR@10)")
    for setting in (None, *SETTINGS):
        mark = "*" if setting == chosen else " "
        cells = "".join("  {:.3f}/{:.3f}".format(*scored(k, setting)) for k in corpora)
        print(f"{mark}{'whole legs (before)' if setting is None else str(setting):<52}{cells}", flush=True)


if __name__ == "__main__":
    main()
