"""LoCoMo dev through memory_ask's code path in-process: do the answers cite an evidence turn?

Stores every turn as bench/locomo_inprocess.py does (one brain per conversation, one memory per
turn at `locomo/<sample_id>/<dia_id>.md`, title `<speaker>, <session date>`, content
`<session date> — <speaker>: <text>`, tags `locomo` and the sample id), then asks every scored
question through AskService (retrieve, then generate, as memory_ask does) and maps each
citation's document back to its dialog id. A question "cites evidence" when any citation is on one
of its evidence turns; "gold" when its SQuAD-normalised answer contains the normalised gold
answer (whole words). The target is category 4 (single-hop) cites-evidence >= 0.70 with the
extractive generator:

    python bench/locomo_ask_citations.py --data locomo-dev.json [--data-dir DIR] [--sentences N]

--data is the LoCoMo dev split (snap-research/locomo), default $CAIRN_LOCOMO_DATA. Settings come
from CAIRN_* environment variables; --sentences overrides extractive_sentences, --top-k (default
8, as memory_ask) the chunks retrieved per ask.
"""

from __future__ import annotations

import argparse
import re
import statistics
import string
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_data as h

TARGET_CATEGORY = 4
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """SQuAD's answer normalisation: lowercase, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def contains_gold(answer: str, gold: str) -> bool:
    needle = normalise(gold)
    return bool(needle) and f" {needle} " in f" {normalise(answer)} "


@dataclass(frozen=True)
class Outcome:
    sample_id: str
    category: int
    cites_evidence: bool
    retrieved_evidence: bool  # an evidence turn was among the retrieved chunks (the ceiling)
    gold: bool
    chars: int
    sentences: int
    ms: float


def ingest(container: Container, conv: Any, reuse: bool) -> Brain:
    if reuse:
        return container.brains.get(conv.slug)
    brain = container.brains.create(f"LoCoMo {conv.sample_id}", slug=conv.slug)
    for turn in conv.turns:
        container.ingest.remember(brain, turn.content, title=turn.title, tags=turn.tags, path=turn.path)
    return brain


async def ask(container: Container, brain: Brain, question: str, top_k: int) -> tuple[dict[str, Any], float]:
    """The ask stream folded into {answer, cited, retrieved} and the whole call's milliseconds."""
    started = time.perf_counter()
    cited: list[str] = []
    retrieved: list[str] = []
    answer = ""
    async for event in container.ask.ask(brain, question, top_k=top_k):
        if event.type == "retrieve":
            retrieved = [c["document_id"] for c in event.data["chunks"]]
        elif event.type == "citation":
            cited.append(event.data["document_id"])
        elif event.type == "done":
            answer = event.data["answer"]
        elif event.type == "error":
            raise SystemExit(f"ask failed: {event.data}")
    ms = (time.perf_counter() - started) * 1000
    return {"answer": answer, "cited": cited, "retrieved": retrieved}, ms


async def run_conversation(container: Container, conv: Any, reuse: bool, top_k: int) -> list[Outcome]:
    brain = ingest(container, conv, reuse)
    dia_of = {
        doc.id: h.dia_id_from_path(doc.path, conv.sample_id)
        for doc in container.documents.documents(brain, prefix="locomo/")
    }
    out = []
    for q in conv.questions:
        result, ms = await ask(container, brain, q.question, top_k)
        evidence = set(q.evidence)
        out.append(
            Outcome(
                sample_id=conv.sample_id,
                category=q.category,
                cites_evidence=any(dia_of.get(d) in evidence for d in result["cited"]),
                retrieved_evidence=any(dia_of.get(d) in evidence for d in result["retrieved"]),
                gold=contains_gold(result["answer"], q.answer),
                chars=len(result["answer"]),
                sentences=len(result["cited"]),
                ms=ms,
            )
        )
    return out


def row(label: str, rows: list[Outcome]) -> str:
    if not rows:
        return f"{label:<22}{0:>5}"
    share = statistics.fmean
    p50, p95 = np.percentile([r.ms for r in rows], [50, 95])
    return (
        f"{label:<22}{len(rows):>5}"
        f"{share(r.cites_evidence for r in rows):>9.3f}{share(r.gold for r in rows):>7.3f}"
        f"{share(r.retrieved_evidence for r in rows):>11.3f}"
        f"{share(r.chars for r in rows):>7.0f}{share(r.sentences for r in rows):>6.2f}"
        f"{p50:>8.1f}{p95:>8.1f}"
    )


def report(outcomes: list[Outcome]) -> str:
    header = f"{'':<22}{'n':>5}{'cites':>9}{'gold':>7}{'retrieved':>11}{'chars':>7}{'sents':>6}"
    header += f"{'p50 ms':>8}{'p95 ms':>8}"
    target = [o for o in outcomes if o.category == TARGET_CATEGORY]
    lines = [f"category {TARGET_CATEGORY} ({h.CATEGORY_NAMES[TARGET_CATEGORY]}) by conversation", header]
    for sample in dict.fromkeys(o.sample_id for o in outcomes):
        lines.append(row(sample, [o for o in target if o.sample_id == sample]))
    lines.append(row("overall", target))
    lines += ["", "all categories", header]
    for category, name in sorted(h.CATEGORY_NAMES.items()):
        lines.append(row(f"{category} {name}", [o for o in outcomes if o.category == category]))
    lines.append(row("all", outcomes))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.add_data_argument(parser)
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="reuse a store (skips ingest if it exists)"
    )
    parser.add_argument(
        "--sentences", type=int, default=None, help="extractive_sentences (default: settings)"
    )
    parser.add_argument("--top-k", type=int, default=8, help="chunks retrieved per ask (memory_ask: 8)")
    args = parser.parse_args()

    conversations = h.load_conversations(h.data_path(parser, args))
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-locomo-ask-"))
    reuse = (data_dir / "records.sqlite3").exists()
    overrides = {} if args.sentences is None else {"extractive_sentences": args.sentences}
    settings = Settings(data_dir=data_dir, **overrides)
    if settings.generator != "extractive":
        raise SystemExit("this bench measures the extractive generator (CAIRN_GENERATOR=extractive)")
    container = build_container(settings)

    async def run_all() -> list[Outcome]:
        outcomes: list[Outcome] = []
        for conv in conversations:
            outcomes += await run_conversation(container, conv, reuse, args.top_k)
        return outcomes

    outcomes = anyio.run(run_all)
    print(f"extractive_sentences={settings.extractive_sentences} top_k={args.top_k}")
    print(report(outcomes))
    target = [o for o in outcomes if o.category == TARGET_CATEGORY]
    print(f"data dir: {data_dir}")
    print(
        f"single-hop cites-evidence={statistics.fmean(o.cites_evidence for o in target):.3f} "
        f"gold={statistics.fmean(o.gold for o in target):.3f} n={len(target)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
