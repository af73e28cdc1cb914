"""Reflection and research over typed memories, through the Generator port.

- `reflect`: the memories about a topic, and what they amount to: a summary, patterns, a
  timeline, contradictions and gaps, each entry ending in `[mem:<id>]` citations.
- `research`: a bounded loop for multi-hop questions: retrieve, judge whether what was gathered
  answers the question, search for what is still missing, then write a grounded answer.

A generator that synthesises (a language model) is asked for JSON at each step; only citations
of memories it was shown are kept. The extractive generator (offline, `model_id` "extractive")
synthesises nothing, and the results say so (`llm.provider` "extractive"): summaries and answers
are the memories' own sentences, picked by the generator and quoted; patterns, the timeline,
contradictions and gaps come from the memories' types, dates, keys, subjects and words; a
question is answered sufficiently when each of its terms appears in a gathered memory.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from cairn.domain.errors import CairnError
from cairn.domain.models import Brain, Document, MemoryFacet, MemoryType
from cairn.domain.stopwords import REFLECTION as _STOPWORDS
from cairn.domain.text import query_read
from cairn.ports.generator import Answer, Generator, Passage
from cairn.services.memory.memories import MemoryService
from cairn.services.memory.memory_model import MemoryQuery
from cairn.services.memory.model_calls import EXTRACTIVE, complete, json_object

"""The offline generator's model id."""
RESEARCH_PER_ROUND = 15
MAX_CONTEXT = 40
NEXT_QUERY_CHARS = 400
MAX_FINDINGS = 8
SUFFICIENT, INSUFFICIENT = "SUFFICIENT", "INSUFFICIENT"
CITATION = re.compile(r"[ \t]*\[mem:([^\]\s]+)\]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+#-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
T = TypeVar("T")


class ModelReplyInvalid(CairnError):
    """The model's reply to a step that needs JSON was not a JSON object."""

    code = "bad_response"

    def __init__(self, step: str) -> None:
        super().__init__(f"the model's {step} is not valid JSON")
        self.step = step


@dataclass(frozen=True)
class Recalled:
    memory: Document
    text: str

    @property
    def facet(self) -> MemoryFacet:
        return self.memory.memory or MemoryFacet()


@dataclass(frozen=True)
class Reflection:
    topic: str
    client_id: str | None
    memories_analyzed: int
    summary: str
    patterns: list[str]
    timeline: list[str]
    contradictions: list[str]
    gaps: list[str]
    cited_memory_ids: list[str]
    llm: dict[str, str] | None


@dataclass(frozen=True)
class Sufficiency:
    status: str
    reason: str
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Research:
    topic: str
    client_id: str | None
    answer: str
    key_findings: list[str]
    unresolved: list[str]
    cited_memory_ids: list[str]
    partial: bool
    iterations: int
    memories_analyzed: int
    query_trace: list[dict[str, Any]]
    sufficiency: Sufficiency | None
    llm: dict[str, str] | None
    found_nothing: bool = False
    warning: str | None = None


NO_REFLECTION = "No relevant memories found for this topic."
NO_REFLECTION_GAP = "No memories exist about this topic — consider storing foundational context."
NO_RESEARCH = "No memories were found for this topic."
NO_RESEARCH_GAP = "No stored memory matched this question: record the context it needs first."
EXTRACTIVE_WARNING = (
    "No language model is configured: the answer quotes the memories (extractive), and the "
    "question counts as answered when each of its terms appears in a gathered memory."
)

REFLECT_PROMPT = """Reflect on the memories below about this topic: {topic}

Reply with one JSON object and nothing else:
{{"summary": "2-3 sentences on what the memories say together",
 "patterns": ["a theme that only several memories together show"],
 "timeline": ["a dated event or change, oldest first"],
 "contradictions": ["memories that really conflict"],
 "gaps": ["a question the memories leave open that is worth recording"]}}
End every claim with the memories that support it as [mem:<id>], ids copied from the memory
headers. Use an empty list where nothing applies. Use nothing but the memories."""

GATE_PROMPT = """Question: {topic}

Do the memories below hold everything needed to answer the question fully, every step of it?
Reply with one JSON object and nothing else:
{{"status": "SUFFICIENT" or "INSUFFICIENT", "reason": "one sentence",
 "missing": ["a concrete, searchable fact still needed; empty when sufficient"]}}"""

SYNTHESIS_PROMPT = """Question: {topic}

Answer the question from the memories below only. Reply with one JSON object and nothing else:
{{"answer": "the answer, each claim followed by [mem:<id>] with ids copied from the memory headers",
 "key_findings": ["a grounded fact ending with its [mem:<id>]"],
 "unresolved": ["what the memories do not answer"]}}
Never cite an id that is not in a memory header; say what is missing rather than guess."""


class MemoryReflection:
    def __init__(
        self,
        memories: MemoryService,
        generator: Generator,
        *,
        provider: str,
        min_relevance: float | None = None,
    ) -> None:
        self.memories = memories
        self.generator = generator
        self.provider = provider
        """The configured generator's kind (settings), named in results next to its model."""
        self.min_relevance = min_relevance
        """Read only memories whose calibrated relevance to the query reaches this (None: all)."""

    @property
    def extractive(self) -> bool:
        return self.generator.model_id == EXTRACTIVE

    @property
    def llm(self) -> dict[str, str]:
        if self.extractive:
            return {"provider": EXTRACTIVE, "model": EXTRACTIVE}
        return {"provider": self.provider, "model": self.generator.model_id}

    # -- reflect -------------------------------------------------------------------------------

    def reflect(self, brain: Brain | None, topic: str, *, client_id: str | None, limit: int) -> Reflection:
        topic = query_read(topic)
        found = self._recall(brain, topic, client_id, limit)
        if not found:
            return Reflection(topic, client_id, 0, NO_REFLECTION, [], [], [], [NO_REFLECTION_GAP], [], None)
        if self.extractive:
            history = self._recall(brain, topic, client_id, limit, history=True)
            return self._reflect_offline(topic, client_id, found, history)
        shown = found[:MAX_CONTEXT]
        reply = _object(self._complete(REFLECT_PROMPT.format(topic=topic), _labelled(shown)))
        if reply is None:
            raise ModelReplyInvalid("reflection")
        allowed = {r.memory.id for r in shown}
        cited: list[str] = []
        summary = _grounded(_text(reply.get("summary")), allowed, cited)
        lists = {
            name: [_grounded(item, allowed, cited) for item in _texts(reply.get(name))]
            for name in ("patterns", "timeline", "contradictions", "gaps")
        }
        return Reflection(
            topic, client_id, len(found), summary, lists["patterns"], lists["timeline"],
            lists["contradictions"], lists["gaps"], list(dict.fromkeys(cited)), self.llm,
        )  # fmt: skip

    def _reflect_offline(
        self, topic: str, client_id: str | None, found: list[Recalled], history: list[Recalled]
    ) -> Reflection:
        answer = self._complete(topic, _plain(found))
        quotes = _quotes(answer)
        if quotes:
            body = " ".join(quotes)
        else:
            top = found[0]
            body = f'"{_line(top.text, 200)}" {_cite([top])}'
        summary = f"Extractive summary of {len(found)} memories, quoted without a language model: {body}"
        patterns, timeline = _patterns(found), _timeline(found)
        contradictions, gaps = _contradictions(found, history), _gaps(topic, found)
        entries = [summary, *patterns, *timeline, *contradictions, *gaps]
        cited = [i for entry in entries for i in CITATION.findall(entry)]
        return Reflection(
            topic, client_id, len(found), summary, patterns, timeline, contradictions, gaps,
            list(dict.fromkeys(cited)), self.llm,
        )  # fmt: skip

    # -- research ------------------------------------------------------------------------------

    def research(
        self, brain: Brain | None, topic: str, *, client_id: str | None, max_iterations: int
    ) -> Research:
        topic = query_read(topic)
        gathered: dict[str, Recalled] = {}
        trace: list[dict[str, Any]] = []
        asked: set[str] = set()
        gate: Sufficiency | None = None
        query, iterations = topic, 0
        while iterations < max_iterations:
            iterations += 1
            asked.add(query.casefold())
            hits = self._recall(brain, query, client_id, RESEARCH_PER_ROUND)
            for hit in hits:
                gathered.setdefault(hit.memory.id, hit)
            trace.append({"query": query, "retrieved": len(hits), "cumulative": len(gathered)})
            if not gathered:
                break
            gate = self._judge(topic, list(gathered.values()))
            if gate.status == SUFFICIENT:
                break
            query = "; ".join(gate.missing)[:NEXT_QUERY_CHARS].strip()
            if not query or query.casefold() in asked:
                break
        found = list(gathered.values())
        if not found:
            return Research(
                topic, client_id, NO_RESEARCH, [], [NO_RESEARCH_GAP], [], True, iterations, 0, trace,
                None, self.llm, found_nothing=True,
            )  # fmt: skip
        partial = gate is None or gate.status != SUFFICIENT
        shown = found[:MAX_CONTEXT]
        if self.extractive:
            return self._answer_offline(topic, client_id, shown, len(found), partial, iterations, trace, gate)
        reply = _object(self._complete(SYNTHESIS_PROMPT.format(topic=topic), _labelled(shown)))
        if reply is None:
            raise ModelReplyInvalid("synthesis")
        allowed = {r.memory.id for r in shown}
        cited: list[str] = []
        answer = _grounded(_text(reply.get("answer")), allowed, cited)
        findings = [_grounded(item, allowed, cited) for item in _texts(reply.get("key_findings"))]
        unresolved = [_grounded(item, allowed, cited) for item in _texts(reply.get("unresolved"))]
        return Research(
            topic, client_id, answer, findings, unresolved, list(dict.fromkeys(cited)), partial,
            iterations, len(found), trace, gate, self.llm,
        )  # fmt: skip

    def _answer_offline(
        self,
        topic: str,
        client_id: str | None,
        shown: list[Recalled],
        analyzed: int,
        partial: bool,
        iterations: int,
        trace: list[dict[str, Any]],
        gate: Sufficiency | None,
    ) -> Research:
        quotes = _quotes(self._complete(topic, _plain(shown)))
        answer = " ".join(quotes) if quotes else "No sentence of the memories found answers this directly."
        findings = [f"{_line(r.text, 160)} {_cite([r])}" for r in shown[:MAX_FINDINGS]]
        unresolved = [f"No memory found mentions: {term}" for term in (gate.missing if gate else [])]
        cited = [i for entry in [answer, *findings] for i in CITATION.findall(entry)]
        return Research(
            topic, client_id, answer, findings, unresolved, list(dict.fromkeys(cited)), partial,
            iterations, analyzed, trace, gate, self.llm, warning=EXTRACTIVE_WARNING,
        )  # fmt: skip

    def _judge(self, topic: str, found: list[Recalled]) -> Sufficiency:
        if self.extractive:
            missing = _uncovered(topic, found)
            if not missing:
                return Sufficiency(SUFFICIENT, "Every term of the question appears in a gathered memory.")
            reason = "No gathered memory mentions " + ", ".join(missing) + "."
            return Sufficiency(INSUFFICIENT, reason, missing)
        reply = _object(self._complete(GATE_PROMPT.format(topic=topic), _labelled(found[:MAX_CONTEXT])))
        if reply is None:  # a broken gate ends the loop; the answer is written from what was found
            return Sufficiency(INSUFFICIENT, "The sufficiency check did not return valid JSON.")
        status = _text(reply.get("status")).strip().upper()
        return Sufficiency(
            SUFFICIENT if status == SUFFICIENT else INSUFFICIENT,
            _text(reply.get("reason")).strip(),
            [m.strip() for m in _texts(reply.get("missing")) if m.strip()][:5],
        )

    # -- retrieval and the generator -----------------------------------------------------------

    def _recall(
        self, brain: Brain | None, query: str, client_id: str | None, limit: int, *, history: bool = False
    ) -> list[Recalled]:
        """The best `limit` memories for `query` (at `min_relevance` or above, when set); with
        `history`, facts and statuses superseded ones included (contradictions). Reading them to
        reflect does not count as an access; no brain (none made yet) holds nothing."""
        if brain is None:
            return []
        q = MemoryQuery(
            types=(MemoryType.fact.value, MemoryType.status.value) if history else (),
            client_ids=(client_id,) if client_id else (),
            include_superseded=history,
            limit=limit,
            count_access=False,
        )
        hits = self.memories.search(brain, query, q)
        if self.min_relevance is not None:
            floor = self.min_relevance
            hits = [h for h in hits if h.score is not None and h.score >= floor]
        texts = [self.memories.text_or_none(h.memory) for h in hits]  # a damaged one: None, skipped
        return [Recalled(h.memory, text) for h, text in zip(hits, texts, strict=True) if text is not None]

    def _complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return complete(self.generator, question, passages)


# -- passages and replies ------------------------------------------------------------------------


def _plain(found: Sequence[Recalled]) -> list[Passage]:
    """The memories' own text, for the extractive generator to quote."""
    return [Passage(chunk_id=r.memory.id, document_id=r.memory.id, text=r.text) for r in found]


def _labelled(found: Sequence[Recalled]) -> list[Passage]:
    """Each memory with a header naming its id, type, date, client and agent, for a model."""
    out = []
    for r in found:
        f = r.facet
        header = (
            f"[mem:{r.memory.id}] type={f.type.value} created={_day(r.memory.created_at)}"
            f" client={f.client_id or 'global'} agent={f.source_agent or 'unknown'}"
        )
        out.append(Passage(chunk_id=r.memory.id, document_id=r.memory.id, text=f"{header}\n{r.text}"))
    return out


def _object(answer: Answer) -> dict[str, Any] | None:
    return json_object(answer.text)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _texts(value: Any) -> list[str]:
    """A reply's list of strings; an object entry is its values joined, anything else dropped."""
    items = value if isinstance(value, list) else []
    out = []
    for item in items:
        if isinstance(item, dict):
            item = " — ".join(str(v) for v in item.values() if v not in (None, ""))
        if isinstance(item, str) and item.strip():
            out.append(item.strip())
    return out


def _grounded(text: str, allowed: set[str], cited: list[str]) -> str:
    """`text` without citations of memories that were not shown (fabricated); the kept ids are
    appended to `cited`."""

    def keep(match: re.Match[str]) -> str:
        if match.group(1) in allowed:
            cited.append(match.group(1))
            return match.group(0)
        return ""

    return CITATION.sub(keep, text).strip()


def _quotes(answer: Answer) -> list[str]:
    """The extractive answer's sentences, each quoted and cited with its memory."""
    out: list[str] = []
    for c in answer.citations:
        entry = f'"{c.quote.strip()}" [mem:{c.document_id}]'
        if c.quote.strip() and entry not in out:
            out.append(entry)
    return out


# -- the offline analysis ------------------------------------------------------------------------


def _cite(found: Sequence[Recalled], most: int = 5) -> str:
    return " ".join(f"[mem:{r.memory.id}]" for r in found[:most])


def _line(text: str, chars: int) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= chars else line[: chars - 1].rstrip() + "…"


def _day(moment: datetime | None) -> str:
    return moment.date().isoformat() if moment else "undated"


def _patterns(found: list[Recalled]) -> list[str]:
    """What recurs: a type, an agent, a client or a knowledge category shared by two or more."""
    n = len(found)
    out: list[str] = []
    groups: list[tuple[str, Callable[[Recalled], str | None]]] = [
        ("are {}s", lambda r: r.facet.type.value),
        ("were recorded by {}", lambda r: r.facet.source_agent),
        ("are about client {}", lambda r: r.facet.client_id if r.facet.client_id != "global" else None),
        ("are {} knowledge", lambda r: r.facet.knowledge_category
         if r.facet.knowledge_category != "general" else None),
    ]  # fmt: skip
    for phrase, of in groups:
        members: dict[str, list[Recalled]] = defaultdict(list)
        for r in found:
            value = of(r)
            if value:
                members[value].append(r)
        for value, rs in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if len(rs) >= 2:
                out.append(f"{len(rs)} of {n} memories {phrase.format(value)} {_cite(rs)}")
    return out


def _timeline(found: list[Recalled]) -> list[str]:
    def when(r: Recalled) -> datetime:
        return r.facet.valid_from or r.memory.created_at

    return [
        f"{_day(when(r))} {r.facet.type.value}: {_line(r.text, 120)} {_cite([r])}"
        for r in sorted(found, key=lambda r: (when(r), r.memory.id))
    ]


def _contradictions(found: list[Recalled], history: list[Recalled]) -> list[str]:
    """Facts sharing a key, or statuses sharing a subject, whose values differ."""
    groups: dict[tuple[str, str], dict[str, Recalled]] = defaultdict(dict)
    for r in [*found, *history]:
        f = r.facet
        name = f.key if f.type is MemoryType.fact else f.subject if f.type is MemoryType.status else None
        if name:
            groups[(f.type.value, name)].setdefault(r.memory.id, r)
    out = []
    for (kind, name), members in sorted(groups.items()):

        def value(r: Recalled) -> str:
            return r.facet.status_value or r.facet.content_hash or r.text

        if len({value(r) for r in members.values()}) < 2:
            continue
        ordered = sorted(members.values(), key=lambda r: (r.memory.created_at, r.memory.id))
        said = "; ".join(
            f'"{_line(r.text, 120)}" ({"current" if r.facet.current else "superseded"}) {_cite([r])}'
            for r in ordered
        )
        label = "key" if kind == "fact" else "subject"
        out.append(f'{kind} {label} "{name}" has differing values: {said}')
    return out


def _gaps(topic: str, found: list[Recalled]) -> list[str]:
    out = []
    missing = _uncovered(topic, found)
    if missing:
        out.append("No memory found mentions: " + ", ".join(missing))
    kinds = Counter(r.facet.type for r in found)
    if not kinds[MemoryType.decision]:
        out.append("No decision about this topic is recorded.")
    if not kinds[MemoryType.status]:
        out.append("No status records the current state of this topic.")
    keyless = [r for r in found if r.facet.type is MemoryType.fact and not r.facet.key]
    if keyless:
        n = len(keyless)
        out.append(f"{n} facts have no key, so a newer fact cannot supersede them {_cite(keyless)}")
    return out


def _terms(text: str) -> list[str]:
    words = [w.casefold() for w in _WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if w not in _STOPWORDS and (len(w) > 1 or w.isdigit())))


def _stem(word: str) -> str:
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _uncovered(question: str, found: Sequence[Recalled]) -> list[str]:
    """The question's terms that no gathered memory mentions."""
    seen = {_stem(t) for r in found for t in _terms(r.text)}
    return [t for t in _terms(question) if _stem(t) not in seen]
