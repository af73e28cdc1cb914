"""LoCoMo data loading and retrieval scoring for the in-process LoCoMo benches.

The data is the dev split of the public LoCoMo benchmark (snap-research/locomo, CC BY-NC 4.0):
one JSON file, a list of conversations. It is not part of this repository; every bench that
reads it takes `--data PATH`, defaulting to the CAIRN_LOCOMO_DATA environment variable.

Storing convention (the LoCoMo recall harness's, so in-process numbers compare with an MCP
run): one brain per conversation (name `LoCoMo <sample_id>`, slug `locomo-<sample_id>`), one
memory_remember per dialogue turn at `locomo/<sample_id>/<dia_id>.md`, title
`<speaker>, <session date>`, content `<session date> — <speaker>: <text>` (plus
` [image: <caption>]` when the turn shares an image), tags `locomo` and the sample id.

Scoring: every question of categories 1-4 (multi-hop, temporal, open-domain, single-hop;
5, adversarial, is left out) that names at least one evidence turn of its conversation is asked;
each hit is mapped back to a dialogue id from its path (or, failing that, its exact content), and
per category and overall the script reports recall@1/5/10 (share of the evidence turns in the
first k hits), hit@5 and MRR@10, plus search latency p50/p95.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

DATA_ENV = "CAIRN_LOCOMO_DATA"
SCORING_VERSION = "1.0"  # the recall harness's scoring this module reproduces

CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""LoCoMo question categories that are scored (5, adversarial, is not)."""

RECALL_KS: tuple[int, ...] = (1, 5, 10)
HIT_K = 5
MRR_K = 10
METRIC_NAMES: tuple[str, ...] = (*(f"recall@{k}" for k in RECALL_KS), f"hit@{HIT_K}", f"mrr@{MRR_K}")


# --- the --data argument ----------------------------------------------------------------------


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=os.environ.get(DATA_ENV) or None,
        help=f"LoCoMo dev JSON file, locomo-dev.json (default: ${DATA_ENV})",
    )


def data_path(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    """The checked --data path; a clear argparse error (exit 2) when it is missing."""
    if args.data is None:
        parser.error(
            f"--data is required (or set {DATA_ENV}): the LoCoMo dev split, locomo-dev.json, "
            "from snap-research/locomo"
        )
    path = Path(args.data)
    if not path.is_file():
        parser.error(f"--data: no such file: {path}")
    return path


# --- data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One dialogue turn; the unit stored as one memory."""

    sample_id: str
    dia_id: str
    speaker: str
    date: str
    text: str
    blip_caption: str | None = None

    @property
    def path(self) -> str:
        return f"locomo/{self.sample_id}/{self.dia_id}.md"

    @property
    def title(self) -> str:
        return f"{self.speaker}, {self.date}"

    @property
    def content(self) -> str:
        body = f"{self.date} — {self.speaker}: {self.text}"
        if self.blip_caption:
            body += f" [image: {self.blip_caption}]"
        return body

    @property
    def tags(self) -> list[str]:
        return ["locomo", self.sample_id]


@dataclass(frozen=True)
class Question:
    sample_id: str
    index: int  # position in the conversation's original qa list
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # cleaned dia_ids, all present in the conversation


@dataclass
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn]
    questions: list[Question]  # scored questions only (categories 1-4, with evidence)
    skipped_questions: dict[str, int] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return f"locomo-{self.sample_id}"


_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalize_dia_id(session: int | str, turn: int | str) -> str:
    return f"D{int(session)}:{int(turn)}"


def parse_evidence(raw: Iterable[str]) -> list[str]:
    """LoCoMo evidence strings as `D<s>:<t>` ids, in order, without duplicates.

    Handles joined ids ("D8:6; D9:17"), stray colons ("D:11:26") and zero padding ("D30:05").
    """
    out: list[str] = []
    for item in raw:
        for session, turn in _EVIDENCE_ID.findall(str(item)):
            dia = normalize_dia_id(session, turn)
            if dia not in out:
                out.append(dia)
    return out


def load_conversations(path: str | Path, limit: int | None = None) -> list[Conversation]:
    """Read a LoCoMo JSON file (a list of samples) into Conversations."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))[:limit]
    conversations = []
    for sample in samples:
        sample_id = str(sample["sample_id"])
        conv = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key)
            for key in conv
            if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conv[key], list)
        )
        turns: list[Turn] = []
        for _number, key in sessions:
            date = str(conv.get(f"{key}_date_time", "")).strip()
            turns += [
                Turn(
                    sample_id=sample_id,
                    dia_id=raw["dia_id"].strip(),
                    speaker=raw["speaker"],
                    date=date,
                    text=raw.get("text", ""),
                    blip_caption=raw.get("blip_caption") or None,
                )
                for raw in conv[key]
            ]
        known = {t.dia_id for t in turns}
        questions: list[Question] = []
        skipped = {"adversarial": 0, "no_evidence": 0, "unknown_category": 0}
        for index, qa in enumerate(sample.get("qa", [])):
            category = int(qa.get("category", 0))
            if category == 5:
                skipped["adversarial"] += 1
                continue
            if category not in CATEGORY_NAMES:
                skipped["unknown_category"] += 1
                continue
            evidence = tuple(e for e in parse_evidence(qa.get("evidence", [])) if e in known)
            if not evidence:
                skipped["no_evidence"] += 1
                continue
            questions.append(
                Question(sample_id, index, str(qa["question"]), str(qa.get("answer", "")), category, evidence)
            )
        conversations.append(
            Conversation(
                sample_id=sample_id,
                speaker_a=conv.get("speaker_a", ""),
                speaker_b=conv.get("speaker_b", ""),
                turns=turns,
                questions=questions,
                skipped_questions=skipped,
            )
        )
    return conversations


# --- mapping hits back to dialogue ids --------------------------------------------------------

_DIA_IN_SEGMENT = re.compile(r"D(\d+)(?::|_|-)(\d+)(?:\.[A-Za-z0-9]+)*")
_SAMPLE_IN_PATH = re.compile(r"locomo/([^/]+)/[^/]*$")
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.DOTALL)
_LEADING_HEADING = re.compile(r"\A#{1,6} [^\n]*\n+")


def dia_id_from_path(path: str, sample_id: str | None = None) -> str | None:
    """The `D<s>:<t>` id a hit path names, or None.

    Tolerates a leading slash, a brain prefix, a missing or other suffix, a URL-encoded colon and
    `_`/`-` for `:`. With sample_id, a path under `locomo/<another sample>/` is rejected.
    """
    if not path:
        return None
    cleaned = unquote(str(path)).strip().rstrip("/")
    if sample_id is not None:
        owner = _SAMPLE_IN_PATH.search(cleaned)
        if owner and owner.group(1) != sample_id:
            return None
    match = _DIA_IN_SEGMENT.fullmatch(re.split(r"[/\\]", cleaned)[-1])
    return normalize_dia_id(match.group(1), match.group(2)) if match else None


def _content_key(text: str) -> str:
    return " ".join(text.split())


@dataclass
class MappingStats:
    hits: int = 0
    by_path: int = 0
    by_content: int = 0
    unmapped: int = 0
    unmapped_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "hits": self.hits,
            "mapped_by_path": self.by_path,
            "mapped_by_content": self.by_content,
            "unmapped": self.unmapped,
            "unmapped_examples": self.unmapped_examples,
        }


class HitMapper:
    """Maps the search hits of one conversation to dialogue ids, keeping counts."""

    def __init__(self, conversation: Conversation, stats: MappingStats) -> None:
        self.sample_id = conversation.sample_id
        self.stats = stats
        self._known = {t.dia_id for t in conversation.turns}
        self._by_content = {_content_key(t.content): t.dia_id for t in conversation.turns}

    def _from_content(self, content: str) -> str | None:
        text = _FRONT_MATTER.sub("", content or "", count=1).strip()
        for candidate in (text, _LEADING_HEADING.sub("", text, count=1)):
            dia = self._by_content.get(_content_key(candidate))
            if dia:
                return dia
        return None

    def map_hit(self, path: str | None, content: str | None = None) -> str | None:
        self.stats.hits += 1
        dia = dia_id_from_path(path or "", self.sample_id)
        if dia is not None and dia in self._known:
            self.stats.by_path += 1
            return dia
        dia = self._from_content(content or "")
        if dia is not None:
            self.stats.by_content += 1
            return dia
        self.stats.unmapped += 1
        if len(self.stats.unmapped_examples) < 5:
            self.stats.unmapped_examples.append(str(path))
        return None


# --- scoring ----------------------------------------------------------------------------------


def question_metrics(evidence: Sequence[str], ranked: Sequence[str | None]) -> dict[str, float]:
    """Metrics for one question; `ranked` holds one dialogue id (or None) per hit, best first."""
    wanted = set(evidence)
    metrics = {
        f"recall@{k}": len(wanted.intersection(d for d in ranked[:k] if d)) / len(wanted) for k in RECALL_KS
    }
    metrics[f"hit@{HIT_K}"] = float(any(d in wanted for d in ranked[:HIT_K]))
    metrics[f"mrr@{MRR_K}"] = next(
        (1.0 / rank for rank, d in enumerate(ranked[:MRR_K], start=1) if d in wanted), 0.0
    )
    return metrics


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {"n": len(rows)}
    for name in METRIC_NAMES:
        out[name] = sum(r[name] for r in rows) / len(rows) if rows else float("nan")
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method); NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class RunRecorder:
    """Collects ingest timings and per-question rankings, then builds the report."""

    def __init__(self, system: str, data_path: str | Path, top_k: int, **extra: Any) -> None:
        self.system = system
        self.data_path = str(data_path)
        self.top_k = top_k
        self.extra = extra
        self.mapping = MappingStats()
        self.conversations: list[dict[str, Any]] = []
        self.ingest_seconds = 0.0
        self.turns_ingested = 0
        self.search_ms: list[float] = []
        self.questions: list[dict[str, Any]] = []
        self.skipped: dict[str, int] = {}

    def mapper(self, conversation: Conversation) -> HitMapper:
        return HitMapper(conversation, self.mapping)

    def add_ingest(self, conversation: Conversation, seconds: float) -> None:
        self.ingest_seconds += seconds
        self.turns_ingested += len(conversation.turns)
        for reason, count in conversation.skipped_questions.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count
        self.conversations.append(
            {
                "sample_id": conversation.sample_id,
                "turns": len(conversation.turns),
                "questions": len(conversation.questions),
                "ingest_s": round(seconds, 4),
            }
        )

    def add_question(
        self, question: Question, ranked: Sequence[str | None], latency_ms: float
    ) -> dict[str, float]:
        metrics = question_metrics(question.evidence, ranked)
        self.search_ms.append(latency_ms)
        self.questions.append(
            {
                "sample_id": question.sample_id,
                "index": question.index,
                "category": question.category,
                "question": question.question,
                "evidence": list(question.evidence),
                "retrieved": list(ranked),
                "latency_ms": round(latency_ms, 3),
                **{k: round(v, 4) for k, v in metrics.items()},
            }
        )
        return metrics

    def report(self) -> dict[str, Any]:
        by_category = {
            str(cat): aggregate([q for q in self.questions if q["category"] == cat]) for cat in CATEGORY_NAMES
        }
        seconds = self.ingest_seconds
        return {
            "system": self.system,
            "scoring_version": SCORING_VERSION,
            "data": {
                "file": self.data_path,
                "conversations": len(self.conversations),
                "turns": self.turns_ingested,
                "questions_scored": len(self.questions),
                "questions_skipped": self.skipped,
            },
            "top_k": self.top_k,
            "metrics": {"overall": aggregate(self.questions), "by_category": by_category},
            "search_latency_ms": {
                "p50": percentile(self.search_ms, 50),
                "p95": percentile(self.search_ms, 95),
                "mean": sum(self.search_ms) / len(self.search_ms) if self.search_ms else None,
            },
            "ingest": {
                "turns": self.turns_ingested,
                "seconds": seconds,
                "turns_per_s": self.turns_ingested / seconds if seconds > 0 else float("nan"),
            },
            "mapping": self.mapping.as_dict(),
            "conversations": self.conversations,
            "extra": self.extra,
            "questions": self.questions,
        }


def format_table(report: dict[str, Any]) -> str:
    """A compact text table of a report (everything but the summary line)."""
    head = f"{'category':<16}{'n':>5}" + "".join(f"{m:>11}" for m in METRIC_NAMES)
    lines = [f"system: {report['system']}   data: {report['data']['file']}", head, "-" * len(head)]
    rows = [(f"{c} {name}", report["metrics"]["by_category"][str(c)]) for c, name in CATEGORY_NAMES.items()]
    rows.append(("overall", report["metrics"]["overall"]))
    for label, agg in rows:
        lines.append(f"{label:<16}{agg['n']:>5}" + "".join(f"{agg[m]:>11.3f}" for m in METRIC_NAMES))
    lat, ing, mp = report["search_latency_ms"], report["ingest"], report["mapping"]
    lines.append("-" * len(head))
    lines.append(f"search latency ms: p50 {lat['p50']:.1f}  p95 {lat['p95']:.1f}")
    lines.append(f"ingest: {ing['turns']} turns in {ing['seconds']:.2f} s = {ing['turns_per_s']:.1f} turns/s")
    mapping = (
        f"hits: {mp['hits']}, mapped by path {mp['mapped_by_path']}, "
        f"by content {mp['mapped_by_content']}, unmapped {mp['unmapped']}"
    )
    if mp["unmapped_examples"]:
        mapping += f" (e.g. {mp['unmapped_examples'][:3]})"
    lines.append(mapping)
    skipped = report["data"]["questions_skipped"]
    lines.append(
        f"questions scored: {report['data']['questions_scored']}; skipped: "
        + ", ".join(f"{k} {v}" for k, v in skipped.items())
    )
    return "\n".join(lines)


def summary_line(report: dict[str, Any]) -> str:
    o = report["metrics"]["overall"]
    return (
        f"overall recall@10={o['recall@10']:.3f} hit@5={o['hit@5']:.3f} mrr@10={o['mrr@10']:.3f} "
        f"search_p95_ms={report['search_latency_ms']['p95']:.1f} "
        f"ingest_turns_per_s={report['ingest']['turns_per_s']:.1f}"
    )


def write_report(report: dict[str, Any], path: str | Path) -> None:
    def clean(value: Any) -> Any:  # NaN is not JSON
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    Path(path).write_text(json.dumps(clean(report), indent=1, ensure_ascii=False) + "\n", "utf-8")
