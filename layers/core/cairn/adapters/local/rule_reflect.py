"""The offline reflector: how a session went, read from what was said, and what to keep from it.

Outcome comes from signals in the talk: thanks / "that worked" / solved -> success; "doesn't work" /
error / failed / wrong / still broken -> failure; both -> partial, except that a failure followed by
an explicit fix ("that worked", "fixed", "solved") is a success; neither -> informational. The
summary and highlights are the session's own sentences (the rule-based facts, and quotes), joined
by short labels ("Request:", "Outcome:"); nothing else is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.adapters.local import rule_facts_text as text
from cairn.adapters.local.rule_facts import ROLES, RuleFactExtractor, voice_of
from cairn.adapters.local.rule_facts_lexicon import FAILURE, NEGATED, REQUEST, RESOLVED, SUCCESS
from cairn.ports.facts import FactDraft, Utterance
from cairn.ports.reflection import ReflectionDraft

NAME = "rules"
_SUCCESS, _RESOLVED, _FAILURE = (
    re.compile(SUCCESS, re.I),
    re.compile(RESOLVED, re.I),
    re.compile(FAILURE, re.I),
)
_NEGATED, _REQUEST = re.compile(NEGATED, re.I), re.compile(REQUEST, re.I)
_BAD = ("failure", "partial")
_KEY_CATEGORIES = ("decision", "plan", "preference", "event", "status")
_QUOTE_CHARS = 200


@dataclass(frozen=True)
class _Said:
    """One sentence of the session, in order, with who said it."""

    utterance: Utterance
    text: str

    @property
    def by_user(self) -> bool:
        return self.utterance.role == "user"


def _quote(sentence: str) -> str:
    short = sentence if len(sentence) <= _QUOTE_CHARS else sentence[: _QUOTE_CHARS - 1].rstrip() + "…"
    return f'"{short}"'


def _labelled(label: str, sentence: str) -> str:
    """'Request: "Can you check it?"' - a full stop only when the quote has no ending of its own."""
    end = "" if sentence.rstrip().endswith((".", "!", "?", "…")) else "."
    return f"{label}: {_quote(sentence)}{end}"


def _signal(pattern: re.Pattern[str], sentence: str) -> bool:
    """A signal that is not negated ("no errors", "without failing")."""
    return any(not _NEGATED.search(sentence[: m.start()]) for m in pattern.finditer(sentence))


def _is_request(s: _Said) -> bool:
    """A user's question or ask with content ("How have you been?" is not one)."""
    asks = text.is_question(s.text) or bool(_REQUEST.match(s.text))
    return s.by_user and asks and len(text.substance(s.text)) >= 2


@dataclass(frozen=True)
class _Reading:
    outcome: str
    failures: list[_Said]
    open_request: _Said | None


def _read(said: list[_Said]) -> _Reading:
    wins = [i for i, s in enumerate(said) if not text.is_question(s.text) and _signal(_SUCCESS, s.text)]
    losses = [i for i, s in enumerate(said) if _signal(_FAILURE, s.text) and not _is_request(s)]
    losses = losses or [i for i, s in enumerate(said) if _signal(_FAILURE, s.text)]
    if not wins and not losses:
        return _Reading("informational", [], None)
    if not losses:
        return _Reading("success", [], None)
    last_win = wins[-1] if wins else -1
    if last_win > losses[-1] and _signal(_RESOLVED, said[last_win].text):
        return _Reading("success", [], None)  # the problem was reported, then fixed
    outcome = "partial" if wins else "failure"
    asked = [i for i, s in enumerate(said) if _is_request(s)]
    pending = [i for i in asked if i > last_win] or asked  # nothing asked since: the last ask stands
    return _Reading(outcome, [said[i] for i in losses], said[pending[-1]] if pending else None)


class RuleReflector:
    def __init__(
        self, extractor: RuleFactExtractor | None = None, *, summary_facts: int = 4, highlights: int = 6
    ) -> None:
        self.extractor = extractor or RuleFactExtractor()
        self.summary_facts = summary_facts
        self.highlights = highlights

    @property
    def name(self) -> str:
        return NAME

    def reflect(self, title: str | None, utterances: Sequence[Utterance]) -> ReflectionDraft | None:
        spoken = [u for u in utterances if u.role in ROLES and u.text.strip()]
        facts = self.extractor.extract(spoken)
        with_facts = {i for f in facts for i in f.source_ids}
        sentences = [text.said(u.text) for u in spoken]
        substantive = [
            u
            for u, own in zip(spoken, sentences, strict=True)
            if u.id in with_facts or len(text.substance(" ".join(own))) >= 3
        ]
        if not substantive:
            return None  # nothing said but greetings and headings
        said = [_Said(u, s) for u, own in zip(spoken, sentences, strict=True) for s in own]
        reading = _read(said)
        key = [f for f in facts if f.category in ("decision", "plan")]
        return ReflectionDraft(
            outcome=reading.outcome,
            should_record_episode=len(substantive) >= 2 or bool(key) or reading.outcome in _BAD,
            summary=self._summary(title, said, facts, reading),
            highlights=self._highlights(facts, reading),
            retry_feedback=self._feedback(reading),
            importance=self._importance(facts, key, reading),
        )

    def _summary(
        self, title: str | None, said: list[_Said], facts: list[FactDraft], reading: _Reading
    ) -> str:
        parts = [f"{title.strip().rstrip('.')}."] if title and title.strip() else []
        labelled = len(parts)
        request = next((s for s in said if _is_request(s)), None)
        if request is not None:
            parts.append(_labelled("Request", request.text))
        top = _top(facts, self.summary_facts)
        parts += [f.text for f in top]
        if len(parts) == labelled:  # no request, no fact: quote the first sentence with content
            first = next((s for s in said if len(text.substance(s.text)) >= 2), said[0])
            parts.append(_labelled(voice_of(first.utterance).at(True), first.text))
        covered = {i for f in top for i in f.source_ids}
        if reading.failures and reading.failures[-1].utterance.id not in covered:
            parts.append(_labelled("Problem", reading.failures[-1].text))
        parts.append(f"Outcome: {reading.outcome}.")
        return " ".join(parts)

    def _highlights(self, facts: list[FactDraft], reading: _Reading) -> tuple[str, ...]:
        key = [f for f in facts if f.category in _KEY_CATEGORIES or f.importance >= 0.55]
        out = [f.text for f in _top(key, self.highlights)]
        if reading.open_request is not None:
            out.append(_labelled("Open", reading.open_request.text))
        return tuple(out)

    @staticmethod
    def _feedback(reading: _Reading) -> str | None:
        if reading.outcome not in _BAD:
            return None
        first, last = reading.failures[0], reading.failures[-1]
        parts = [_labelled("What went wrong", first.text)]
        if last.text != first.text:
            parts.append(_labelled("Last reported", last.text))
        if reading.open_request is not None:
            parts.append(_labelled("Unresolved request", reading.open_request.text))
        return " ".join(parts)

    @staticmethod
    def _importance(facts: list[FactDraft], key: list[FactDraft], reading: _Reading) -> float:
        score = 0.3 + 0.05 * min(len(facts), 6)
        score += 0.15 if key else 0.0
        score += 0.15 if reading.outcome in _BAD else 0.0
        return round(min(score, 0.95), 2)


def _top(facts: list[FactDraft], n: int) -> list[FactDraft]:
    """The `n` most important facts, kept in the order they were said."""
    ranked = sorted(range(len(facts)), key=lambda i: (-facts[i].importance, i))[:n]
    return [facts[i] for i in sorted(ranked)]
