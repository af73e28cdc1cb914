"""The four reasoning streams run at once, and their merge (think mode=parallel, ponder).

Each stream runs in its own thread and gets the same deadline; a stream still running at the
deadline is reported as timed out and left out of the merge (its thread is not waited for). The
merge, the same for rule and model streams:

- insights: every stream's (its first MAX_STREAM_INSIGHTS), de-duplicated (same words, or nine
  tenths of the shorter one's terms shared), a duplicate adding its stream to `sources`;
  importance = the stream's weight (critical 0.85, analytical and synthetic 0.8, creative 0.7)
  − 0.05 per earlier insight of that stream + 0.05 per extra source, within 0.3..1; confidence =
  the best source stream's; evidence = the source streams' reasoning steps sharing most terms with
  it (two at most, else the first step);
- recommendations: up to two per stream, ranked by the stream's confidence (priority 1 first), the
  rationale being that stream's first insights; concerns = the critical stream's risks sharing at
  least 30 % of their terms with it;
- conflicts: a critical-stream concern sharing at least 30 % of its terms with an analytical or
  synthetic recommendation (severity 0.3 + 0.5 × the share); a creative recommendation that relaxes
  one of the constraints while the synthetic stream keeps them (severity 0.4); stream confidences
  more than 0.3 apart (severity = the spread). At most five. Each names the claims on both sides
  (evidence), when it was found, and a resolution framework for its kind;
- conclusion: the synthetic stream's, else the analytical, critical or creative one's;
- confidence = mean of the completed streams' − min(0.25, 0.1 × the conflicts' total severity);
- quality = 0.4 × completed/4 + 0.2 × min(1, insights/8) + 0.2 × min(1, recommendations/4)
  + 0.2 × confidence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from statistics import mean
from typing import Final, Literal, cast

from cairn.services.thoughtmcp.reasoning.models import (
    Conflict,
    ConflictClaim,
    MergedInsight,
    Recommendation,
    Resolution,
    StreamName,
    StreamReport,
)
from cairn.services.thoughtmcp.reasoning.rules import STREAMS, StreamOutput
from cairn.services.thoughtmcp.reasoning.text import overlap, shared, shorten, term_set

_WEIGHT: Final = {"analytical": 0.8, "creative": 0.7, "critical": 0.85, "synthetic": 0.8}
_CONCLUSION_ORDER: Final = ("synthetic", "analytical", "critical", "creative")
MAX_CONFLICTS: Final = 5
MAX_STREAM_INSIGHTS: Final = 20  # a stream's insights merged: one per goal would make the merge quadratic

Status = Literal["completed", "timeout", "failed"]
StreamWork = Callable[[str, float], StreamOutput]
"""(stream name, deadline on time.monotonic()) -> the stream's output."""


@dataclass
class StreamRun:
    name: str
    status: Status
    elapsed_ms: int
    output: StreamOutput | None = None
    error: str | None = None

    def report(self) -> StreamReport:
        return StreamReport(
            name=cast(StreamName, self.name),
            status=self.status,
            processing_time=self.elapsed_ms,
            confidence=self.output.confidence if self.output else None,
            error=self.error,
        )


@dataclass
class Merged:
    conclusion: str
    insights: list[MergedInsight]
    recommendations: list[Recommendation]
    conflicts: list[Conflict]
    confidence: float
    quality: float


def run_streams(
    work: StreamWork, *, budget_s: float, classify: Callable[[BaseException], tuple[Status, str]]
) -> list[StreamRun]:
    """The four streams, concurrently, each bounded by the same deadline `budget_s` from now;
    `classify` turns a stream's exception into its status and a message."""
    start = time.monotonic()
    deadline = start + budget_s
    pool = ThreadPoolExecutor(max_workers=len(STREAMS), thread_name_prefix="reasoning-stream")
    finished: dict[str, float] = {}

    def timed(name: str) -> StreamOutput:
        try:
            return work(name, deadline)
        finally:
            finished[name] = time.monotonic()

    futures: dict[str, Future[StreamOutput]] = {name: pool.submit(timed, name) for name in STREAMS}
    wait(futures.values(), timeout=budget_s)
    pool.shutdown(wait=False, cancel_futures=True)
    runs: list[StreamRun] = []
    for name, future in futures.items():
        if not future.done() or future.cancelled():  # cancelled: the budget ran out before it started
            runs.append(StreamRun(name, "timeout", round(budget_s * 1000), error="no result in time"))
            continue
        elapsed = round((finished.get(name, time.monotonic()) - start) * 1000)
        exc = future.exception()
        if exc is None:
            runs.append(StreamRun(name, "completed", elapsed, output=future.result()))
        else:
            status, message = classify(exc)
            runs.append(StreamRun(name, status, elapsed, error=message))
    return runs


def merge(runs: Sequence[StreamRun], constraints: Sequence[str], *, detected_at: str) -> Merged:
    """`detected_at`: the moment the conflicts found are stamped with (ISO 8601)."""
    done = [(r.name, r.output) for r in runs if r.output is not None]
    if not done:
        raise ValueError("no stream completed")
    insights = _insights(done)
    recommendations = _recommendations(done)
    conflicts = _conflicts(done, constraints, detected_at)
    base = mean(output.confidence for _, output in done)
    confidence = _clamp(base - min(0.25, 0.1 * sum(c.severity for c in conflicts)))
    quality = _clamp(
        0.4 * len(done) / len(STREAMS)
        + 0.2 * min(1.0, len(insights) / 8)
        + 0.2 * min(1.0, len(recommendations) / 4)
        + 0.2 * confidence
    )
    outputs = dict(done)
    lead = next(outputs[name] for name in _CONCLUSION_ORDER if name in outputs)
    return Merged(lead.conclusion, insights, recommendations, conflicts, confidence, quality)


def _insights(done: list[tuple[str, StreamOutput]]) -> list[MergedInsight]:
    merged: list[dict[str, object]] = []
    for name, output in done:
        steps = [term_set(step) for step in output.reasoning]
        for i, content in enumerate(output.insights[:MAX_STREAM_INSIGHTS]):
            said = _said(content)
            same = next((m for m in merged if _duplicate(cast(_Said, m["said"]), said)), None)
            if same is not None:
                sources = cast(list[str], same["sources"])
                if name not in sources:
                    sources.append(name)
                    same["importance"] = min(1.0, cast(float, same["importance"]) + 0.05)
                    same["confidence"] = max(cast(float, same["confidence"]), output.confidence)
                    evidence = cast(list[str], same["evidence"])
                    evidence.extend(e for e in _evidence(said, output, steps) if e not in evidence)
                continue
            importance = max(0.3, _WEIGHT[name] - 0.05 * i)
            merged.append(
                {
                    "content": content,
                    "said": said,
                    "sources": [name],
                    "importance": importance,
                    "confidence": output.confidence,
                    "evidence": _evidence(said, output, steps),
                }
            )
    out = [
        MergedInsight(
            content=str(m["content"]),
            sources=cast(list[StreamName], m["sources"]),
            importance=_clamp(cast(float, m["importance"]), high=1.0),
            confidence=_clamp(cast(float, m["confidence"]), high=1.0),
            evidence=cast(list[str], m["evidence"])[:3],
        )
        for m in merged
    ]
    return sorted(out, key=lambda m: -m.importance)  # stable: stream order breaks ties


def _evidence(insight: _Said, output: StreamOutput, steps: list[set[str]]) -> list[str]:
    """The stream's reasoning steps that share most terms with one of its insights (`steps`: the
    steps' terms, taken once for all its insights)."""
    scored = [
        (shared(insight.terms, terms), i, step)
        for i, (step, terms) in enumerate(zip(output.reasoning, steps, strict=True))
        if step != insight.text
    ]
    related = [step for share, _, step in sorted(scored, key=lambda t: (-t[0], t[1])) if share > 0][:2]
    return related or output.reasoning[:1]


def _recommendations(done: list[tuple[str, StreamOutput]]) -> list[Recommendation]:
    risks = dict(done)["critical"].risks if "critical" in dict(done) else []
    found: list[tuple[float, int, str, str, str]] = []
    seen: list[_Said] = []
    for order, (name, output) in enumerate(done):
        for description in output.recommendations[:2]:
            said = _said(description)
            if any(_duplicate(s, said) for s in seen):
                continue
            seen.append(said)
            reasons = [i for i in output.insights if i != description][:2] or [output.conclusion]
            found.append((output.confidence, order, name, description, _sentences(reasons)))
    found.sort(key=lambda f: (-f[0], f[1]))
    return [
        Recommendation(
            description=description,
            priority=rank,
            confidence=_clamp(confidence, high=1.0),
            sources=[cast(StreamName, name)],
            rationale=rationale,
            concerns=[risk for risk in risks if risk != description and overlap(risk, description) >= 0.3][
                :3
            ],
        )
        for rank, (confidence, _, name, description, rationale) in enumerate(found, 1)
    ]


def _sentences(parts: Sequence[str]) -> str:
    """Parts joined as one rationale: each ending in a full stop."""
    return " ".join(p.rstrip(" .") + "." for p in parts if p.strip())


@dataclass
class _Found:
    kind: str
    description: str
    severity: float
    claims: list[tuple[str, str]]  # (stream, what it claimed), one per side


def _conflicts(
    done: list[tuple[str, StreamOutput]], constraints: Sequence[str], detected_at: str
) -> list[Conflict]:
    outputs = dict(done)
    found: list[_Found] = []
    critical = outputs.get("critical")
    if critical is not None:
        for other in ("analytical", "synthetic"):
            if other not in outputs:
                continue
            for risk in critical.risks[:4]:
                rec = next((r for r in outputs[other].recommendations if overlap(risk, r) >= 0.3), None)
                if rec is None:
                    continue
                share = overlap(risk, rec)
                found.append(
                    _Found(
                        "risk",
                        f'The critical stream\'s concern "{shorten(risk, 90)}" bears on the {other} '
                        f'recommendation "{shorten(rec, 90)}"',
                        min(0.9, 0.3 + 0.5 * share),
                        [("critical", risk), (other, rec)],
                    )
                )
                break
    creative, synthetic = outputs.get("creative"), outputs.get("synthetic")
    if creative is not None and synthetic is not None:
        for constraint in constraints:
            relaxing = next((r for r in creative.recommendations if overlap(constraint, r) >= 0.8), None)
            if relaxing is not None:
                found.append(
                    _Found(
                        "approach",
                        f"The creative stream would relax '{shorten(constraint, 60)}', "
                        "which the synthetic plan keeps",
                        0.4,
                        [("creative", relaxing), ("synthetic", synthetic.conclusion)],
                    )
                )
                break
    if len(done) > 1:
        high = max(done, key=lambda d: d[1].confidence)
        low = min(done, key=lambda d: d[1].confidence)
        spread = high[1].confidence - low[1].confidence
        if spread > 0.3:
            found.append(
                _Found(
                    "confidence",
                    f"The {high[0]} stream is far surer ({high[1].confidence:.2f}) than the {low[0]} stream "
                    f"({low[1].confidence:.2f})",
                    spread,
                    [(high[0], high[1].conclusion), (low[0], low[1].conclusion)],
                )
            )
    return [
        Conflict(
            id=f"conflict-{i}",
            type=f.kind,
            description=f.description,
            severity=_clamp(f.severity, high=1.0),
            source_streams=cast(list[StreamName], [stream for stream, _ in f.claims]),
            evidence=[_claim(stream, claim, outputs[stream]) for stream, claim in f.claims],
            detected_at=detected_at,
            resolution_framework=_resolution(f),
        )
        for i, f in enumerate(found[:MAX_CONFLICTS], 1)
    ]


def _claim(stream: str, claim: str, output: StreamOutput) -> ConflictClaim:
    steps = _evidence(_said(claim), output, [term_set(step) for step in output.reasoning])
    return ConflictClaim(
        stream_id=f"{stream}-stream",
        stream_type=cast(StreamName, stream),
        claim=claim,
        reasoning=steps[0] if steps else output.conclusion,
        confidence=_clamp(output.confidence, high=1.0),
    )


def _resolution(f: _Found) -> Resolution:
    (first, first_claim), (second, second_claim) = f.claims[0], f.claims[1]
    if f.kind == "risk":
        return Resolution(
            approach="Mitigate the risk before acting on the recommendation",
            steps=[
                f'State what would have to be true for "{shorten(first_claim, 70)}" to happen',
                "Check that against what is known now",
                f'Adjust "{shorten(second_claim, 70)}" or add a safeguard for the risk',
            ],
            considerations=["How likely the risk is", "How costly it would be", "Whether it can be undone"],
            recommended_action=f"Act on the {second} recommendation only with a mitigation for the risk",
        )
    if f.kind == "approach":
        return Resolution(
            approach="Decide whether the constraint is firm",
            steps=[
                "Ask who set the constraint and why",
                "Compare the gain from relaxing it with the cost",
                "Keep it unless the gain is clearly larger",
            ],
            considerations=["The constraint's owner", "What relaxing it would unlock"],
            recommended_action=f"Follow the {second} plan and keep the {first} idea as an option",
        )
    return Resolution(
        approach="Gather evidence where the streams disagree most",
        steps=[
            f"List what the {second} stream is unsure of",
            "Find the fact or measurement that would settle it",
            "Reassess once it is known",
        ],
        considerations=["Which stream's assumptions are weakest", "How much the decision depends on them"],
        recommended_action=f"Treat the {first} stream's conclusion as provisional until the gap is closed",
    )


@dataclass(frozen=True)
class _Said:
    """A stream's sentence with what `_duplicate` and `_evidence` compare, read once."""

    text: str
    plain: str  # lower-cased, spaces collapsed
    terms: set[str]


def _said(text: str) -> _Said:
    return _Said(text, " ".join(text.lower().split()), term_set(text))


def _duplicate(a: _Said, b: _Said) -> bool:
    if a.plain == b.plain:
        return True
    return min(len(a.terms), len(b.terms)) >= 4 and shared(a.terms, b.terms) >= 0.9


def _clamp(value: float, *, high: float = 0.95) -> float:
    return round(min(high, max(0.0, value)), 2)
