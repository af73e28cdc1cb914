"""How much of LoCoMo dev the rule-based fact extractor keeps, and how much of what matters.

Every dialogue session is one extract() call (one Utterance per turn: id = dia_id, speaker = the
turn's speaker, said_at = the session's date). Printed:

  evidence-turn yield  share of the distinct QA evidence turns that yield >= 1 fact (overall and
                       per QA category): what the questions need that the extractor kept
  selectivity          share of all turns that yield >= 1 fact: lower means more chit-chat dropped
  facts per turn, a few sample facts, and extraction speed (turns/s)

    .venv/bin/python bench/rule_facts_yield.py --data locomo-dev.json [--samples 12]

--data is the LoCoMo dev split (snap-research/locomo, a JSON list of conversations), default
$CAIRN_LOCOMO_DATA.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import locomo_data
from cairn.adapters.local.rule_facts import RuleFactExtractor
from cairn.ports.facts import FactDraft, Utterance

_SESSION = re.compile(r"^session_(\d+)$")


def said_at(raw: str) -> datetime:
    return datetime.strptime(" ".join(raw.split()), "%I:%M %p on %d %B, %Y")


def sessions(sample: dict[str, Any]) -> list[list[Utterance]]:
    conv = sample["conversation"]
    out = []
    for key in sorted((k for k in conv if _SESSION.match(k)), key=lambda k: int(k.split("_")[1])):
        when = said_at(conv[f"{key}_date_time"])
        roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
        out.append(
            [
                Utterance(t["dia_id"], t["speaker"], roles.get(t["speaker"], "user"), t["text"], when)
                for t in conv[key]
            ]
        )
    return out


def evidence(sample: dict[str, Any]) -> dict[str, set[int]]:
    """dia_id -> the QA categories whose questions cite it."""
    cited: dict[str, set[int]] = defaultdict(set)
    for qa in sample["qa"]:
        for ref in qa.get("evidence", []):
            for dia in re.findall(r"D\d+:\d+", ref):
                cited[dia].add(int(qa["category"]))
    return cited


def main(data: Path, samples: int, seed: int = 3) -> None:
    extractor = RuleFactExtractor()
    turns = kept = facts = 0
    cited_total: dict[str, int] = defaultdict(int)
    cited_kept: dict[str, int] = defaultdict(int)
    elapsed = 0.0
    drawn: list[tuple[str, FactDraft]] = []
    for n, sample in enumerate(json.loads(data.read_text())):
        cited = evidence(sample)
        for session in sessions(sample):
            started = time.perf_counter()
            found = extractor.extract(session)
            elapsed += time.perf_counter() - started
            by_turn: dict[str, int] = defaultdict(int)
            for fact in found:
                for source in fact.source_ids:
                    by_turn[source] += 1
                drawn.append((f"{n}/{fact.source_ids[0]}", fact))
            turns += len(session)
            facts += len(found)
            kept += sum(1 for u in session if by_turn[u.id])
            for u in session:
                keys = ["all", *(f"category {c}" for c in sorted(cited[u.id]))] if u.id in cited else []
                for key in keys:
                    cited_total[key] += 1
                    cited_kept[key] += 1 if by_turn[u.id] else 0
    print(f"{turns} turns, {cited_total['all']} distinct evidence turns, {facts} facts")
    print(f"(a) evidence-turn yield: {cited_kept['all'] / cited_total['all']:.3f}")
    for cat in sorted(k for k in cited_total if k != "all"):
        print(f"    {cat}: {cited_kept[cat] / cited_total[cat]:.3f} of {cited_total[cat]}")
    print(f"(b) selectivity (turns yielding a fact): {kept / turns:.3f}")
    print(f"(c) facts per turn: {facts / turns:.3f}")
    print(f"(e) speed: {turns / elapsed:,.0f} turns/s")
    print("(d) sample facts:")
    for where, fact in random.Random(seed).sample(drawn, min(samples, len(drawn))):
        print(f"  [{where} {fact.category} {fact.importance}] {fact.text}  {list(fact.entities)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    locomo_data.add_data_argument(parser)
    parser.add_argument("--samples", type=int, default=12)
    args = parser.parse_args()
    main(locomo_data.data_path(parser, args), args.samples)
