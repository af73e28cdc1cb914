"""LoCoMo dev as one Mnemosyne `journal` library: Mnemosyne's search vs memory_search on the same data.

Every dialogue session of every conversation becomes one item of one journal library (ingested
through IngestService, so the journal profile cuts it and the concept graph links it): a heading
with the session's date, then one line per turn, `[D<s>:<t>] <speaker>: <text>` (plus the shared
image's caption). Each scored question (categories 1-4 with evidence, bench/locomo_data.py) is then
asked two ways, both returning chunks, best first, 10 of them:

- `memory_search`: SearchService.search (the canonical surface's search: best chunk per document,
  so at most one chunk per session);
- `mnemosyne search`: LibrarySearch with all three legs (vector, fulltext, graph), re-ranking off,
  and with vector + fulltext only.

A chunk's turns are the `[D..]` markers it holds. recall@k is the share of a question's evidence
turns held by the first k chunks; MRR@10 is 1 / the rank of the first chunk holding one.

    python bench/mnemosyne_locomo.py --data locomo-dev.json [--data-dir DIR]

--data is the LoCoMo dev split (snap-research/locomo, CC BY-NC 4.0), default $CAIRN_LOCOMO_DATA.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_data as h
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.services.mnemosyne.libraries import Library
from cairn.services.mnemosyne.library_search import SearchRequest

MARKER = re.compile(r"\[(D\d+:\d+)\]")
KS = (1, 5, 10)


def session_items(conversation: h.Conversation) -> dict[str, str]:
    """Path -> text of each dialogue session of the conversation."""
    sessions: dict[str, list[h.Turn]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.dia_id.split(":")[0], []).append(turn)
    items = {}
    for session, turns in sessions.items():
        lines = [f"# {turns[0].date}", ""]
        for t in turns:
            caption = f" [image: {t.blip_caption}]" if t.blip_caption else ""
            lines.append(f"[{t.dia_id}] {t.speaker}: {t.text}{caption}")
        items[f"{conversation.sample_id}/session-{int(session[1:]):02d}.md"] = "\n".join(lines) + "\n"
    return items


def build(c: Container, conversations: Sequence[h.Conversation]) -> Library:
    known = {lib.brain.slug: lib for lib in c.libraries.libraries()}
    if "locomo-journal" in known:
        return known["locomo-journal"]
    brain = c.brains.create("LoCoMo journal", slug="locomo-journal")
    library = c.libraries.describe(brain.id, library_type="journal")
    started = time.perf_counter()
    count = 0
    for conversation in conversations:
        for path, text in session_items(conversation).items():
            c.ingest.ingest_bytes(library.brain, text.encode(), name=path.rsplit("/", 1)[-1], path=path)
            count += 1
    chunks = c.search.chunks.count(library.uid)
    print(f"build: {count} session items, {chunks} chunks in {time.perf_counter() - started:.0f} s")
    return c.libraries.library(library.uid)


def metrics(evidence: Sequence[str], chunks: Sequence[str]) -> dict[str, float]:
    wanted = set(evidence)
    held = [set(MARKER.findall(text)) for text in chunks]
    out = {f"recall@{k}": len(wanted & set().union(*held[:k])) / len(wanted) for k in KS}
    out["mrr@10"] = next((1.0 / r for r, turns in enumerate(held[:10], start=1) if turns & wanted), 0.0)
    return out


def run(name: str, questions: Sequence[h.Question], search: Callable[[str], list[str]]) -> dict[str, float]:
    rows, ms = [], []
    for q in questions:
        start = time.perf_counter()
        found = search(q.question)
        ms.append((time.perf_counter() - start) * 1000)
        rows.append(metrics(q.evidence, found))
    summary = {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}
    summary["p95_ms"] = statistics.quantiles(ms, n=20)[18]
    cells = "  ".join(f"{k} {v:.3f}" for k, v in summary.items() if k != "p95_ms")
    print(f"{name:<40} {cells}  p95 {summary['p95_ms']:.1f} ms", flush=True)
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    h.add_data_argument(parser)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    conversations = h.load_conversations(h.data_path(parser, args))
    questions = [q for conv in conversations for q in conv.questions]
    with tempfile.TemporaryDirectory() as tmp:
        c = build_container(Settings(data_dir=args.data_dir or Path(tmp)))
        library = build(c, conversations)
        print(f"{len(questions)} questions over {len(conversations)} conversations in one journal library")

        def memory_search(query: str) -> list[str]:
            return [hit.content for hit in c.search.search(library.brain, query, top_k=10).hits]

        def mnemosyne(types: Sequence[str]) -> Callable[[str], list[str]]:
            def search(query: str) -> list[str]:
                request = SearchRequest(query, [library], limit=10, search_types=types, rerank=False)
                return [cand.chunk.text for cand in c.library_search.search(request).candidates]

            return search

        run("memory_search", questions, memory_search)
        run("mnemosyne search (vector+fulltext+graph)", questions, mnemosyne(("vector", "fulltext", "graph")))
        run("mnemosyne search (vector+fulltext)", questions, mnemosyne(("vector", "fulltext")))


if __name__ == "__main__":
    main()
