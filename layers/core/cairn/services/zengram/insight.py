"""zengram's `POST /reflect` and `POST /research`: their bodies checked with zengram's messages,
the work done by services/memory/memory_reflection.py, the result in zengram's shape.

Reflect analyses only memories relevant to its topic: a memory search always returns its best
candidates, related or not, so only hits at or above the calibrated line of a good match
(services/search/relevance.py, GOOD_MATCH) are kept, the line brain_search counts reads by. With
none left the answer is zengram's "nothing found" (`memories_analyzed` 0). Research keeps every
hit: its later rounds search for a missing piece by a few words, which a sentence about it rarely
matches above that line, and its sufficiency judgement already weighs what was gathered."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from cairn.domain.errors import NoBrain
from cairn.domain.js_text import js_blank, js_trim
from cairn.domain.models import Brain
from cairn.ports.generator import GenerationError
from cairn.services.memory.memory_reflection import (
    MemoryReflection,
    ModelReplyInvalid,
    Research,
)
from cairn.services.search.relevance import GOOD_MATCH
from cairn.services.zengram.transfer import HUGE, HUGE_DIGITS
from cairn.services.zengram.validate import Refused, bad, no_markup_in

if TYPE_CHECKING:
    from cairn.services.zengram.deps import ZengramDeps

# zengram's words: Cairn honours its RESEARCH_ENABLED (config.py), beside CAIRN_ZENGRAM_RESEARCH_ENABLED.
RESEARCH_DISABLED = (
    "POST /research is disabled. Set RESEARCH_ENABLED=true to enable the agentic retrieval loop."
)


def reflect(c: ZengramDeps, brain_of: Callable[[], Brain], body: Any) -> dict[str, Any]:
    topic, client_id = _topic(body), _client(body)
    limit = min(max(_integer(body.get("limit"), 20, strict=False), 1), 50)
    with _model("LLM returned invalid JSON response"):
        done = _service(c, min_relevance=GOOD_MATCH).reflect(
            _brain(brain_of), js_trim(topic), client_id=client_id, limit=limit
        )
    out: dict[str, Any] = {
        "topic": topic,
        "client_id": client_id,
        "memories_analyzed": done.memories_analyzed,
        "reflection": {
            "summary": done.summary,
            "patterns": done.patterns,
            "timeline": done.timeline,
            "contradictions": done.contradictions,
            "gaps": done.gaps,
        },
    }
    if done.memories_analyzed:
        out["cited_memory_ids"] = done.cited_memory_ids
    out["llm"] = done.llm
    return out


def research(c: ZengramDeps, brain_of: Callable[[], Brain], body: Any) -> dict[str, Any]:
    if not c.options.zengram_research:
        raise Refused(503, "research_disabled", message=RESEARCH_DISABLED)
    topic, client_id = js_trim(_topic(body)), _client(body)
    no_markup_in(body.get("max_iterations"), "max_iterations")
    rounds = min(max(_integer(body.get("max_iterations"), 2, strict=True), 1), 4)
    with _model("LLM returned invalid JSON synthesis"):
        done = _service(c).research(_brain(brain_of), topic, client_id=client_id, max_iterations=rounds)
    return _research_wire(done)


def _research_wire(done: Research) -> dict[str, Any]:
    out: dict[str, Any] = {"topic": done.topic, "client_id": done.client_id}
    if done.found_nothing:
        out["status"] = "no_memories"
    out.update(
        answer=done.answer,
        key_findings=done.key_findings,
        unresolved=done.unresolved,
        cited_memory_ids=done.cited_memory_ids,
        partial=done.partial,
        iterations=done.iterations,
        memories_analyzed=done.memories_analyzed,
        query_trace=done.query_trace,
    )
    if not done.found_nothing:
        gate = done.sufficiency
        out["sufficiency"] = (
            {"status": gate.status, "reason": gate.reason, "missing": gate.missing} if gate else None
        )
    out["llm"] = done.llm
    if done.warning:
        out["warning"] = done.warning
    return out


def _brain(brain_of: Callable[[], Brain]) -> Brain | None:
    """The served brain; None before the first store made one (nothing to find yet)."""
    try:
        return brain_of()
    except NoBrain:
        return None


def _service(c: ZengramDeps, *, min_relevance: float | None = None) -> MemoryReflection:
    return MemoryReflection(
        c.memories, c.generator, provider=c.options.generator, min_relevance=min_relevance
    )


@contextmanager
def _model(invalid: str) -> Iterator[None]:
    """A model failure as zengram answers it: a reply that is not JSON is 502 `invalid`; a model
    that cannot be reached or fails is 503 `llm_unavailable`."""
    try:
        yield
    except ModelReplyInvalid:
        raise Refused(502, invalid) from None
    except GenerationError as exc:
        raise Refused(503, "llm_unavailable", message=f"The language model failed: {exc.message}") from None


def _topic(body: Any) -> str:
    if not isinstance(body, dict):
        raise bad("Request body must be a JSON object")
    topic = body.get("topic")
    if not isinstance(topic, str) or js_blank(topic):
        raise bad("topic is required (non-empty string)")
    no_markup_in(topic, "topic")
    return topic


def _client(body: dict[str, Any]) -> str | None:
    client_id = body.get("client_id")
    if client_id is not None and not isinstance(client_id, str):
        raise bad("client_id must be a string when provided")
    no_markup_in(client_id, "client_id")
    return js_trim(client_id) or None if isinstance(client_id, str) else None


def _integer(value: Any, default: int, *, strict: bool) -> int:
    """A whole number (`5`, `5.0`, `"5"`); absent -> the default. Anything else is refused when
    `strict` (max_iterations), else read as parseInt would (limit)."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        text = value.strip()
        huge = len(text.lstrip("+-")) > HUGE_DIGITS  # clamped below; int() refuses 4,300 digits
        number = (-HUGE if text.startswith("-") else HUGE) if huge else int(text)
    else:
        number = None
    if number is None:
        if strict:
            raise bad("max_iterations must be an integer")
        if isinstance(value, float) and math.isfinite(value):
            return int(value) or default
        return default  # parseInt of Infinity or NaN is NaN
    return number if strict else number or default
