"""LoCoMo retrieval through Cairn's services in-process (no MCP): fast iteration on retrieval.

Stores every turn the way the LoCoMo recall harness does over MCP (one brain per conversation,
slug `locomo-<sample_id>`; one memory per turn at `locomo/<sample_id>/<dia_id>.md`, title
`<speaker>, <session date>`, content `<session date> — <speaker>: <text>`, tags `locomo` and the
sample id; see bench/locomo_data.py), asks every scored question through SearchService, and scores
with the same recall@k / hit@5 / MRR@10 code (bench/locomo_data.py), so numbers are comparable
with the MCP run. The MCP run stays the reference:

    python bench/locomo_inprocess.py --data locomo-dev.json [--data-dir DIR]

--data is the LoCoMo dev split (snap-research/locomo), default $CAIRN_LOCOMO_DATA. Settings come
from CAIRN_* environment variables (e.g. CAIRN_BM25_WEIGHT=1.0 CAIRN_VECTOR_WEIGHT=0.5).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import locomo_data as h
from cairn.bootstrap import build_container
from cairn.config import Settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.add_data_argument(parser)
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="reuse a store (skips ingest if it exists)"
    )
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    data = h.data_path(parser, args)
    conversations = h.load_conversations(data)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-locomo-"))
    reuse = (data_dir / "records.sqlite3").exists()
    container = build_container(Settings(data_dir=data_dir))
    rec = h.RunRecorder(system="cairn-inprocess", data_path=data, top_k=args.top_k)
    for conv in conversations:
        started = time.perf_counter()
        if reuse:
            brain = container.brains.get(conv.slug)
        else:
            brain = container.brains.create(f"LoCoMo {conv.sample_id}", slug=conv.slug)
            for turn in conv.turns:
                container.ingest.remember(
                    brain, turn.content, title=turn.title, tags=turn.tags, path=turn.path
                )
        rec.add_ingest(conv, 0.0 if reuse else time.perf_counter() - started)
        mapper = rec.mapper(conv)
        for q in conv.questions:
            t0 = time.perf_counter()
            result = container.search.search(brain, q.question, top_k=args.top_k)
            ms = (time.perf_counter() - t0) * 1000
            rec.add_question(q, [mapper.map_hit(hit.path, hit.content) for hit in result.hits], ms)
    report = rec.report()
    print(h.format_table(report))
    if args.out:
        h.write_report(report, args.out)
    print(f"data dir: {data_dir}")
    print(h.summary_line(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
