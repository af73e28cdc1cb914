"""The current memories' entries (services/documents/current_memories.py) through the changes that
make a memory current again or take it away: an erasure reopening the value before, a move, on
every record store. The listing is compared with every memory decoded (the oracle), and no entry
is left naming an erased memory."""

from __future__ import annotations

from cairn.bootstrap import Container
from cairn.domain.models import Brain, MemoryType
from cairn.services.repositories import all_items, documents_pk
from tests.contract.test_current_memories_contract import KEY, brain, oracle

__all__ = ["brain"]


def listed(c: Container, brain: Brain) -> list[str]:
    return [d.id for d in c.memories.current_of_type(brain, [MemoryType.fact])]


def test_an_erased_current_value_s_predecessor_is_listed_and_no_entry_names_the_erased(
    c: Container, brain: Brain
) -> None:
    assert listed(c, brain) == oracle(c, brain, [MemoryType.fact], "key", None)  # entries built
    before = {d.path for d in c.memories.of_type(brain, [MemoryType.fact])}
    c.erasure.erase("source_agent", "a")  # the key's current value and every other one of "a"
    now = listed(c, brain)
    assert now == oracle(c, brain, [MemoryType.fact], "key", None)
    keyed = [
        d for d in c.memories.current_of_type(brain, [MemoryType.fact]) if d.memory and d.memory.key == KEY
    ]
    assert len(keyed) == 1 and keyed[0].memory is not None and keyed[0].memory.source_agent == "b"
    left = {d.path for d in c.memories.of_type(brain, [MemoryType.fact])}
    entries = {
        i.sk.removeprefix("cur#") for i in all_items(c.documents.repo.records, documents_pk(brain.id), "cur#")
    }
    assert not entries & (before - left)


def test_a_moved_memory_is_listed_at_its_new_path(c: Container, brain: Brain) -> None:
    assert listed(c, brain)
    doc = next(
        d for d in c.memories.current_of_type(brain, [MemoryType.fact]) if d.memory and d.memory.key == KEY
    )
    c.documents.rename(brain, doc.path, doc.path.replace(doc.id, doc.id + "-moved"))
    assert listed(c, brain) == oracle(c, brain, [MemoryType.fact], "key", None)
