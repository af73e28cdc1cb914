"""Typed memory search puts relevance first (services/memory/memory_ranking.py): importance and
reads never lift unrelated memories above the one that answers, and a thousand other searches do
not change a query's top three."""

from __future__ import annotations

from cairn.bootstrap import Container
from cairn.domain.models import Brain, MemoryType
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery

ANSWER = "Acme pays its invoices by wire transfer within thirty days."
OTHERS = [
    "The staging cluster is rebuilt every Sunday night.",
    "Marta leads the payments team since March.",
    "Never deploy on Fridays after three in the afternoon.",
    "The on-call rota changes every Monday at nine.",
    "Globex wants weekly status reports by email.",
    "The design review happens on Thursdays.",
]


def ids(container: Container, brain: Brain, query: str) -> list[str]:
    return [h.memory.id for h in container.memories.search(brain, query, MemoryQuery(limit=3))]


def test_critical_and_often_read_memories_do_not_crowd_out_the_answer(
    container: Container, brain: Brain
) -> None:
    answer = container.memories.store(
        brain, MemoryInput(type=MemoryType.fact, content=ANSWER, key="acme-pay", importance=0.5)
    ).memory.id
    for text in OTHERS:  # critical, and each read on every search below
        container.memories.store(brain, MemoryInput(type=MemoryType.event, content=text, importance=1.0))
    question = "how does acme pay invoices"
    first = ids(container, brain, question)
    assert first[0] == answer

    for n in range(1000):  # other searches, each returning (and counting) the critical memories
        container.memories.search(brain, OTHERS[n % len(OTHERS)], MemoryQuery(limit=10))
    if container.memories.access is not None:  # the counts reach the store
        container.memories.access.flush()

    assert ids(container, brain, question) == first
