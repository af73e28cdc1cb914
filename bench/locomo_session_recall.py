"""Session recall vs plain search on LoCoMo dev, in-process (numbers and reasoning: docs/SESSIONS.md).

Every turn is stored as bench/locomo_inprocess.py stores it (one brain per conversation, one
memory per turn at `locomo/<sample_id>/<dia_id>.md`, title `<speaker>, <session date>`, content
`<session date> — <speaker>: <text>`, tags `locomo` and the sample id); pass its --data-dir to
reuse that store, ingest happens only for missing brains. For every scored question and every
scenario below a Cairn session is built through SessionService (create, then append: speaker_a's
turns as `user` messages, speaker_b's as `assistant`, content "<speaker>: <text>"), and the
question is asked three ways, each scored with bench/locomo_data.py's RunRecorder: plain
SearchService.search; SessionService.recall with the context lists switched off (so only the echo
rule acts); SessionService.recall as configured.

Scenarios (6 turns each; evidence turns are never put in a session, so the answer must come from
memory, not from the context window):

  lead-in           the turns just before the question's first evidence turn, in its dialogue
                    session: the conversation has come round to the question's topic.
  dialogue-end      the last turns of the dialogue session holding the first evidence turn: same
                    day's conversation, often on another topic by then.
  conversation-end  the last turns of the whole conversation, whatever the question: mostly
                    unrelated context, which measures what noise costs.

    python bench/locomo_session_recall.py --data locomo-dev.json --data-dir /tmp/locomo-store [--grid]

--data is the LoCoMo dev split (snap-research/locomo), default $CAIRN_LOCOMO_DATA. Settings come
from CAIRN_* variables (CAIRN_SESSION_CONTEXT_WEIGHT, ..._DECAY, ..._GATE_FLOOR).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import locomo_data as h
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.services.search.service import SearchResult, SearchService
from cairn.services.sessions.service import NewMessage
from cairn.services.sessions.session_recall import SessionRecall

TURNS = 6
SCENARIOS = ("lead-in", "dialogue-end", "conversation-end")
GRID: list[dict[str, Any]] = [
    {"context_weight": w, "decay": d, "gate_floor": g, "gate_full": g + 0.3}
    for w in (0.25, 0.5, 1.0)
    for d in (0.5, 0.7)
    for g in (-1.0, 0.2, 0.3)
]
Hits = list[tuple[str, str]]


class CachedSearch(SearchService):
    """Answers a repeated query from memory (the grid asks the same ones under many settings)."""

    def __init__(self, inner: SearchService) -> None:
        super().__init__(inner.chunks, inner.embedder, inner.docs, inner.tuning)
        self.cache: dict[tuple[Any, ...], SearchResult] = {}

    def search(self, brain: Brain, query: str, **kw: Any) -> SearchResult:
        key = (brain.id, query, tuple(sorted(kw.items())))
        if key not in self.cache:
            self.cache[key] = super().search(brain, query, **kw)
        return self.cache[key]


def session_turns(conv: Any, q: Any, scenario: str) -> list[Any]:
    dialogue = q.evidence[0].split(":")[0] + ":"
    if scenario == "lead-in":
        first = next(i for i, t in enumerate(conv.turns) if t.dia_id == q.evidence[0])
        pool = [t for t in conv.turns[:first] if t.dia_id.startswith(dialogue)]
    elif scenario == "dialogue-end":
        pool = [t for t in conv.turns if t.dia_id.startswith(dialogue)]
    else:
        pool = conv.turns
    return [t for t in pool if t.dia_id not in q.evidence][-TURNS:]


def ensure_store(c: Container, convs: list[Any]) -> None:
    have = {b.slug for b in c.brains.list()}
    for conv in convs:
        if conv.slug not in have:
            brain = c.brains.create(f"LoCoMo {conv.sample_id}", slug=conv.slug)
            for t in conv.turns:
                c.ingest.remember(brain, t.content, title=t.title, tags=t.tags, path=t.path)


def build_sessions(c: Container, convs: list[Any], scenario: str) -> dict[tuple[str, int], str]:
    ids = {}
    for conv in convs:
        brain = c.brains.get(conv.slug)
        for q in conv.questions:
            session = c.sessions.create(brain, title=f"{conv.sample_id} q{q.index} {scenario}")
            role = {conv.speaker_a: "user"}
            msgs = [
                NewMessage(role.get(t.speaker, "assistant"), f"{t.speaker}: {t.text}")
                for t in session_turns(conv, q, scenario)
            ]
            if msgs:
                c.sessions.append_many(brain, session.id, msgs)
            ids[(conv.sample_id, q.index)] = session.id
    return ids


def score(c: Container, convs: list[Any], ask: Callable[[Brain, Any], Hits]) -> tuple[Any, list[float]]:
    rec = h.RunRecorder(system="cairn-sessions", data_path="locomo-dev", top_k=10)
    times: list[float] = []
    for conv in convs:
        brain = c.brains.get(conv.slug)
        rec.add_ingest(conv, 0.0)
        mapper = rec.mapper(conv)
        for q in conv.questions:
            t0 = time.perf_counter()
            hits = ask(brain, q)
            times.append((time.perf_counter() - t0) * 1000)
            rec.add_question(q, [mapper.map_hit(path, text) for path, text in hits], times[-1])
    return rec.report(), times


def line(label: str, report: dict[str, Any]) -> str:
    o, cats = report["metrics"]["overall"], report["metrics"]["by_category"]
    per = " ".join(f"c{n}={cats[str(n)]['recall@10']:.3f}" for n in (1, 2, 3, 4))
    return f"{label:<62} recall@10={o['recall@10']:.3f} mrr@10={o['mrr@10']:.3f}  ({per})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h.add_data_argument(parser)
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse a store (ingests what is missing)")
    parser.add_argument("--grid", action="store_true", help="also score the settings in GRID")
    args = parser.parse_args()

    convs = h.load_conversations(h.data_path(parser, args))
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-locomo-"))
    c = build_container(Settings(data_dir=data_dir))
    ensure_store(c, convs)
    tuning = c.sessions.recaller.tuning
    print(f"data dir: {data_dir}\nrecall tuning: {tuning}")

    def plain(brain: Brain, q: Any) -> Hits:
        return [(x.path, x.content) for x in c.search.search(brain, q.question, top_k=10).hits]

    def recall_with(recaller: SessionRecall, ids: dict[tuple[str, int], str]) -> Callable[[Brain, Any], Hits]:
        def ask(brain: Brain, q: Any) -> Hits:
            session_id = ids[(q.sample_id, q.index)]
            session, _ = c.sessions.get(brain, session_id)
            context = c.sessions.recent(brain, session_id, recaller.tuning.window)
            chunks = recaller.recall(brain, session, q.question, context, top_k=10)
            return [(x.path, x.content) for x in chunks]

        return ask

    base, _ = score(c, convs, plain)
    print(line("plain search (the same for every scenario)", base))
    echo_only = SessionRecall(c.search, c.search.embedder, replace(tuning, context_weight=0.0))
    cached = CachedSearch(c.search)
    for scenario in SCENARIOS:
        ids = build_sessions(c, convs, scenario)

        def service(brain: Brain, q: Any, ids: dict[tuple[str, int], str] = ids) -> Hits:
            chunks = c.sessions.recall(brain, ids[(q.sample_id, q.index)], q.question, top_k=10)
            return [(x.path, x.content) for x in chunks]

        print(
            line(
                f"[{scenario}] session recall, echo rule only",
                score(c, convs, recall_with(echo_only, ids))[0],
            )
        )
        report, times = score(c, convs, service)
        print(line(f"[{scenario}] session recall (SessionService.recall)", report))
        print(
            f"[{scenario}] session recall latency ms: "
            f"p50 {h.percentile(times, 50):.1f} p95 {h.percentile(times, 95):.1f}"
        )
        for setting in GRID if args.grid else []:
            recaller = SessionRecall(cached, c.search.embedder, replace(tuning, **setting))
            print(line(f"[{scenario}] {setting}", score(c, convs, recall_with(recaller, ids))[0]))
    _, plain_ms = score(c, convs, plain)
    print(
        f"plain search latency ms: p50 {h.percentile(plain_ms, 50):.1f} p95 {h.percentile(plain_ms, 95):.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
