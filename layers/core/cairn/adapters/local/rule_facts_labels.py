"""What kind of fact a kept sentence is (type, category) and how much it matters (importance)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.adapters.local.rule_facts_lexicon import (
    DECISION,
    EVENT_VERBS,
    PREFERENCE,
    REACTION_OBJECTS,
    RELATIONS,
    STATUS_START,
)
from cairn.domain.models import MemoryType

_PLAN = re.compile(
    r"\b(?:going to|gonna|planning|plan to|plans to|will|'ll|intend(?:ing)? to|hoping to|hope to"
    r"|want to|wanna|can't wait to|looking forward to|thinking (?:of|about)|about to|next|tomorrow"
    r"|upcoming|aim(?:ing)? to|signed up|off to|need to|have to|gotta)\b",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(?:I|[Ww]e|[Ii]'d|[Ww]e'd|[Tt]hey|[Kk]ids|[Hh]e|[Ss]he)\s+(?:\w+ly\s+|really\s+|also\s+|just\s+|still\s+)?"
    r"(?:love|loved|like|liked|enjoy|enjoyed|prefer|hate|hated|adore|adored)s?\s+(?:to\s+)?([A-Za-z']+)",
)
_OPINION = re.compile(r"^I (?:think|believe|feel|guess|reckon|suppose)\b")
_STATUS = re.compile(r"^(?:I'm|I am|Im)\s+(?:\w+ly\s+|still\s+|now\s+|so\s+|really\s+)?(\w+)")
_OWNED_RELATION = re.compile(r"\b(?:my|our)\s+(?:(\w+)\s+)?(\w+(?:-\w+)?)", re.I)
_PLACE = re.compile(r"\b(?:in|at|to|from|near|visited|visit|around)\s+(?:the\s+)?([A-Z][a-z]+)")


@dataclass(frozen=True)
class Label:
    type: MemoryType
    category: str
    importance: float


def preference(sentence: str) -> bool:
    """A liking with a real object ("I love painting"), not a reaction ("I love that!")."""
    m = _PREFERENCE.search(sentence)
    if m and m.group(1).lower() not in REACTION_OBJECTS:
        return True
    low = sentence.lower()
    return any(w in low for w in ("favourite", "favorite", "fave", "passionate about", "obsessed with"))


def planned(sentence: str) -> bool:
    return bool(_PLAN.search(sentence))


def relation(sentence: str) -> bool:
    return any(
        (m.group(1) or "").lower() in RELATIONS or m.group(2).lower() in RELATIONS
        for m in _OWNED_RELATION.finditer(sentence)
    )


def _category(sentence: str, first_person: bool, dated: bool, names: list[str]) -> tuple[MemoryType, str]:
    words = {w.lower() for w in re.findall(r"[A-Za-z']+", sentence)}
    if first_person and words & DECISION:
        return MemoryType.decision, "decision"
    if first_person and _PLAN.search(sentence):
        return MemoryType.event, "plan"
    if words & PREFERENCE and preference(sentence):
        return MemoryType.fact, "preference"
    status = _STATUS.match(sentence)
    if status and (status.group(1).lower() in STATUS_START or status.group(1).lower().endswith("ing")):
        return MemoryType.status, "status"
    if dated or (first_person and words & EVENT_VERBS):
        return MemoryType.event, "event"
    if relation(sentence):
        return MemoryType.fact, "relationship"
    if any(m.group(1) in names for m in _PLACE.finditer(sentence)):
        return MemoryType.fact, "place"
    if _OPINION.match(sentence):
        return MemoryType.note, "opinion"
    return MemoryType.fact, "personal" if first_person else "fact"


_WEIGHT = {"decision": 0.25, "plan": 0.2, "preference": 0.1, "event": 0.05, "relationship": 0.05}


def label(sentence: str, *, first_person: bool, dated: bool, names: list[str], others: int) -> Label:
    """Type, category and importance of a kept sentence (`sentence` is its original wording)."""
    kind, category = _category(sentence, first_person, dated, names)
    score = 0.4 + _WEIGHT.get(category, 0.0)
    score += 0.15 if dated else 0.0
    score += min(others, 2) * 0.05
    score += 0.05 if relation(sentence) and category != "relationship" else 0.0
    score -= 0.05 if category == "opinion" or not first_person else 0.0
    return Label(kind, category, round(min(max(score, 0.1), 0.95), 2))
