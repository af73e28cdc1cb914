"""LoCoMo dev through memory_extract's pipeline: how many evidence turns end up as a stored fact.

Each LoCoMo conversation becomes a brain and each of its dialogue sessions a Cairn session; the
turns are appended as messages (metadata: speaker, said_at), `skip_extract` on all but the last
(exactly what memory_extract's session mode does), and the extraction jobs run on the embedded
default (rule-based extractor, SQLite, ONNX MiniLM for dedupe). Then, from the fact notes'
provenance (source message ids -> dia_ids):

  stored-fact yield   share of the distinct QA evidence turns with >= 1 stored fact, by category
  fact recall@10      share of questions whose top 10 search hits *among fact notes only* include
                      a fact sourced from one of its evidence turns

    .venv/bin/python bench/locomo_extract_stored.py --data locomo-dev.json [--data-dir DIR]

--data is the LoCoMo dev split (snap-research/locomo, a JSON list of conversations), default
$CAIRN_LOCOMO_DATA.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.sessions.service import NewMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_data
from rule_facts_yield import evidence, sessions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    locomo_data.add_data_argument(parser)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data = locomo_data.data_path(parser, args)

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-extract-"))
    container = build_container(Settings(data_dir=data_dir))
    cited_total: dict[int, int] = defaultdict(int)
    cited_kept: dict[int, int] = defaultdict(int)
    evidence_total = evidence_kept = turns = facts = confirmed = questions = found = 0
    q_by_cat: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    started = time.perf_counter()
    for sample in json.loads(data.read_text()):
        brain = container.brains.create(f"LoCoMo {sample['sample_id']}")
        dia_of: dict[str, str] = {}
        for dialogue in sessions(sample):
            session = container.sessions.create(brain, title=f"{dialogue[0].said_at:%d %B %Y}")
            last = len(dialogue) - 1
            items = [
                NewMessage(
                    u.role,
                    u.text,
                    metadata={
                        "speaker": u.speaker,
                        "said_at": u.said_at.isoformat() if u.said_at else None,
                        "skip_extract": i != last,
                    },
                )
                for i, u in enumerate(dialogue)
            ]
            messages = container.sessions.append_many(brain, session.id, items)
            dia_of.update({m.id: u.id for m, u in zip(messages, dialogue, strict=True)})
            turns += len(dialogue)
        container.jobs.run_pending()
        notes = [
            d for d in container.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact"
        ]
        facts += len(notes)
        confirmed += sum(1 for d in notes if int(d.metadata.get("confirmations") or 1) > 1)
        sourced = {
            d.id: {dia_of.get(s) for s in str(d.metadata.get("source_ids", "")).split(",")} for d in notes
        }
        kept_turns = set().union(*sourced.values()) if sourced else set()
        for dia, categories in evidence(sample).items():
            evidence_total += 1
            evidence_kept += dia in kept_turns
            for c in categories:
                cited_total[c] += 1
                cited_kept[c] += dia in kept_turns
        for qa in sample["qa"]:
            wanted = {d for ref in qa.get("evidence", []) for d in re.findall(r"D\d+:\d+", ref)}
            if not wanted:
                continue
            hits = container.search.search(brain, qa["question"], top_k=10, path_prefix="memory/").hits
            hit = any(wanted & sourced.get(h.document_id, set()) for h in hits)
            questions += 1
            found += hit
            q_by_cat[int(qa["category"])][0] += 1
            q_by_cat[int(qa["category"])][1] += hit
    elapsed = time.perf_counter() - started

    print(f"turns {turns}, stored facts {facts} ({facts / turns:.2f} per turn), confirmed twice+ {confirmed}")
    print(f"stored-fact yield: {evidence_kept}/{evidence_total} = {evidence_kept / evidence_total:.3f}")
    for c in sorted(cited_total):
        print(f"  category {c}: {cited_kept[c]}/{cited_total[c]} = {cited_kept[c] / cited_total[c]:.3f}")
    print(f"fact recall@10 (fact notes only): {found}/{questions} = {found / questions:.3f}")
    for c in sorted(q_by_cat):
        n, k = q_by_cat[c]
        print(f"  category {c}: {k}/{n} = {k / n:.3f}")
    print(
        f"ingest + extraction + questions: {elapsed:.1f} s ({turns / elapsed:.1f} turns/s); data: {data_dir}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
