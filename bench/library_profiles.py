"""Library-type profiles (ingest/profiles.py) against the default cut, on labelled corpora.

For each Mnemosyne library type, bench/library_corpora.py generates a corpus (seeded templates)
with queries and the passages that answer them. The corpus is indexed twice into a real embedded
container (ONNX MiniLM, SQLite FTS5 + vectors) through DocumentIndexer: once cut by the default
profile, once by the type's candidate profile. Every query runs through ChunkIndex.search with
the default leg weights (bm25 1.0, vector 0.4). A candidate that beats the default cut loses each
of its rules in turn while that costs nothing (so only rules that help are kept); then the kept
cut is also searched with a stronger full-text leg (vector 0.2) and a stronger vector leg (1.0).
Scores pool three draws of each corpus (seeds 7, 8, 9), so a decision rests on 90-300 queries.

A query's ranked list is its top 10 chunks; a chunk answers when it holds a gold passage whole.
recall@k: share of gold passages held whole by some chunk in the top k; MRR@10: 1 / rank of the
first chunk holding one. A setting is kept when it raises recall@10 or MRR@10 by at least 0.02
and lowers neither by more than 0.005 (KEEP_GAIN, KEEP_LOSS).

    .venv/bin/python bench/library_profiles.py [--types fiction,journal] [--seeds 7,8,9] [--write-data]

--write-data also writes the first draw of each corpus to bench/data/profiles/<type>.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Document
from cairn.ingest.profiles import CANDIDATES, DEFAULT_PROFILE, PROFILES, LibraryProfile
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from library_corpora import GENERATORS, Corpus, build

KEEP_GAIN = 0.02
KEEP_LOSS = 0.005
TOP_K = 10
WEIGHTS = {
    "default weights": (1.0, 0.4),
    "bm25-heavy (v 0.2)": (1.0, 0.2),
    "vector-heavy (v 1.0)": (1.0, 1.0),
}
DATA = Path(__file__).resolve().parent / "data" / "profiles"


@dataclass(frozen=True)
class Score:
    recall5: float
    recall10: float
    mrr10: float

    def beats(self, other: Score) -> bool:
        d_recall, d_mrr = self.recall10 - other.recall10, self.mrr10 - other.mrr10
        return max(d_recall, d_mrr) >= KEEP_GAIN and min(d_recall, d_mrr) >= -KEEP_LOSS


PerQuery = list[tuple[float, float, float]]  # (recall@5, recall@10, reciprocal rank) per query


def pooled(per_seed: list[PerQuery]) -> Score:
    rows = [row for seed_rows in per_seed for row in seed_rows]
    return Score(*(sum(row[i] for row in rows) / len(rows) for i in range(3)))


def rules_of(profile: LibraryProfile) -> list[str]:
    return [rule.name for rule in profile.boundaries] + list(profile.atomic)


def without(profile: LibraryProfile, rule: str) -> LibraryProfile:
    return replace(
        profile,
        boundaries=tuple(r for r in profile.boundaries if r.name != rule),
        atomic=tuple(a for a in profile.atomic if a != rule),
    )


def describe(profile: LibraryProfile) -> str:
    parts = []
    if profile.boundaries:
        parts.append("boundaries: " + ", ".join(rule.name for rule in profile.boundaries))
    if profile.atomic:
        parts.append(f"atomic: {', '.join(profile.atomic)} (cap {profile.atomic_cap_chars})")
    if (profile.target_chars, profile.overlap_chars) != (700, 120):
        parts.append(f"target {profile.target_chars}/{profile.overlap_chars}")
    return "; ".join(parts) or "default cut"


class TypeRun:
    """One library type over several corpus draws: each cut indexed once per draw, scored lazily."""

    def __init__(self, container: Container, kind: str, seeds: list[int], write: bool) -> None:
        self.container = container
        self.kind = kind
        self.corpora = [build(kind, seed) for seed in seeds]
        self.seeds = seeds
        if write:
            DATA.mkdir(parents=True, exist_ok=True)
            corpus = self.corpora[0]
            (DATA / f"{kind}.json").write_text(
                json.dumps(corpus.to_json(), indent=1, ensure_ascii=False) + "\n"
            )
        embed = container.adapters.embedder.embed
        self.vectors = [[row.tolist() for row in embed([q for q, _ in c.queries])] for c in self.corpora]
        self.brains: dict[str, list[tuple[Brain, int]]] = {}
        self.scores: dict[tuple[str, tuple[float, float]], tuple[Score, list[float], int]] = {}

    def score(self, profile: LibraryProfile, weights: tuple[float, float]) -> tuple[Score, list[float], int]:
        """Pooled score, MRR@10 per draw, chunk count over all draws."""
        key = describe(profile)
        if key not in self.brains:
            slug = f"{self.kind}-{len(self.brains)}"
            self.brains[key] = [
                index(self.container, corpus, profile, f"{slug}-{seed}")
                for corpus, seed in zip(self.corpora, self.seeds, strict=True)
            ]
        if (key, weights) not in self.scores:
            per_seed = [
                score(self.container, brain, corpus, weights, vectors)
                for (brain, _), corpus, vectors in zip(
                    self.brains[key], self.corpora, self.vectors, strict=True
                )
            ]
            chunks = sum(count for _, count in self.brains[key])
            self.scores[(key, weights)] = (pooled(per_seed), [pooled([p]).mrr10 for p in per_seed], chunks)
        return self.scores[(key, weights)]


def index(container: Container, corpus: Corpus, profile: LibraryProfile, slug: str) -> tuple[Brain, int]:
    brain = container.brains.create(slug, slug=slug)
    indexer = container.documents.indexer
    now = datetime(2025, 1, 1, tzinfo=UTC)
    chunk_count = 0
    for i, (title, text) in enumerate(corpus.docs):
        digest = hashlib.sha256(text.encode()).hexdigest()
        doc = Document(
            id=f"doc_{slug}_{i}",
            brain_id=brain.id,
            path=f"{corpus.kind}/{i}.md",
            title=title,
            checksum_sha256=digest,
            byte_size=len(text),
            blob_key=f"{brain.id}/{digest[:2]}/{digest}",
            commit_sha=digest[:40],
            created_at=now,
            updated_at=now,
        )
        prepared = indexer.prepare(doc, text, profile=profile)
        indexer.apply(doc, prepared)
        chunk_count += prepared.count
    return brain, chunk_count


def score(
    container: Container,
    brain: Brain,
    corpus: Corpus,
    weights: tuple[float, float],
    vectors: list[list[float]],
) -> PerQuery:
    spans = corpus.spans()
    doc_of = {f"{corpus.kind}/{d}.md": d for d in range(len(corpus.docs))}
    rows: PerQuery = []
    for (query, gold), vector in zip(corpus.queries, vectors, strict=True):
        hits = container.adapters.chunks.search(
            ChunkQuery(
                text=query,
                vector=vector,
                filter=ChunkFilter(brain_ids=(brain.id,)),
                top_k=TOP_K,
                bm25_weight=weights[0],
                vector_weight=weights[1],
            )
        )
        found_at: dict[str, int] = {}
        for rank, hit in enumerate(hits, 1):
            c = hit.chunk
            for pid in gold:
                d, a, b = spans[pid]
                if doc_of[c.path] == d and c.start <= a and b <= c.end:
                    found_at.setdefault(pid, rank)
        first = min(found_at.values(), default=None)
        rows.append(
            (
                sum(1 for r in found_at.values() if r <= 5) / len(gold),
                len(found_at) / len(gold),
                1 / first if first else 0.0,
            )
        )
    return rows


def run_type(run: TypeRun) -> tuple[LibraryProfile, str]:
    """Print the type's table; return the cut it keeps and the leg weights it keeps."""
    kind, started = run.kind, time.perf_counter()
    candidate = CANDIDATES[kind]
    default_w = WEIGHTS["default weights"]
    rows: list[tuple[str, tuple[Score, list[float], int]]] = []

    def measured(label: str, profile: LibraryProfile, weights: tuple[float, float]) -> Score:
        result = run.score(profile, weights)
        rows.append((label, result))
        return result[0]

    base = measured("default cut", DEFAULT_PROFILE, default_w)
    kept = DEFAULT_PROFILE
    notes = []
    if rules_of(candidate):
        full = measured(f"candidate ({describe(candidate)})", candidate, default_w)
        if full.beats(base):
            kept, kept_score = candidate, full
            while len(rules_of(kept)) > 1:  # drop the rule that costs least, while it costs nothing
                lighter = {rule: without(kept, rule) for rule in rules_of(kept)}
                scored = {
                    rule: measured(f"  {describe(kept)} without {rule}", p, default_w)
                    for rule, p in lighter.items()
                }
                rule = max(
                    scored, key=lambda r: (scored[r].recall10 + scored[r].mrr10, -rules_of(kept).index(r))
                )
                if kept_score.beats(scored[rule]):
                    break
                notes.append(f"{rule} dropped: no gain over the cut without it")
                kept, kept_score = lighter[rule], scored[rule]
            if not kept_score.beats(base):
                notes.append(f"{describe(kept)} alone does not beat the default cut")
                kept = DEFAULT_PROFILE
    reference = run.score(kept, default_w)[0]
    weight_label = "default weights"
    best: Score | None = None
    for label, weights in list(WEIGHTS.items())[1:]:
        s = measured(f"{'kept' if kept is not DEFAULT_PROFILE else 'default'} cut, {label}", kept, weights)
        if s.beats(reference) and (best is None or s.mrr10 > best.mrr10):
            weight_label, best = label, s
    took = time.perf_counter() - started
    queries = sum(len(c.queries) for c in run.corpora)
    docs = sum(len(c.docs) for c in run.corpora)
    print(f"\n## {kind}: seeds {run.seeds}, {docs} documents, {queries} queries ({took:.0f} s)")
    print(
        "| setting | chunks | recall@5 | recall@10 | MRR@10 | MRR@10 per draw |\n"
        "|---|---:|---:|---:|---:|---|"
    )
    for label, (s, per, chunks) in rows:
        draws = " ".join(f"{m:.2f}" for m in per)
        print(f"| {label} | {chunks} | {s.recall5:.3f} | {s.recall10:.3f} | {s.mrr10:.3f} | {draws} |")
    verdict = describe(kept) if kept is not DEFAULT_PROFILE else "default cut"
    print(f"decision: {verdict}; {weight_label}" + (f" ({'; '.join(notes)})" if notes else ""))
    shipped = PROFILES[kind]
    ships_weights = (shipped.bm25_weight, shipped.vector_weight)
    if describe(shipped) != describe(kept) or ships_weights != WEIGHTS[weight_label]:
        print(f"NOTE: PROFILES[{kind!r}] does not match this decision")
    return kept, weight_label


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", default=",".join(GENERATORS), help="comma-separated library types")
    parser.add_argument("--seeds", default="7,8,9", help="corpus draws, pooled")
    parser.add_argument(
        "--write-data", action="store_true", help="write the first draw to bench/data/profiles/"
    )
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-profiles-"))
    container = build_container(Settings(data_dir=data_dir))
    seeds = [int(s) for s in args.seeds.split(",")]
    started = time.perf_counter()
    print(
        f"keep a setting when pooled recall@10 or MRR@10 gains >= {KEEP_GAIN} and neither loses > {KEEP_LOSS}"
    )
    decisions = [
        (kind, *run_type(TypeRun(container, kind, seeds, args.write_data))) for kind in args.types.split(",")
    ]
    print(f"\ntotal {time.perf_counter() - started:.0f} s; data dir {data_dir}")
    for kind, kept, weights in decisions:
        print(f"{kind}: {describe(kept)}; {weights}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
