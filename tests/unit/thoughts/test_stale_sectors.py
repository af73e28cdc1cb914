"""ThoughtMCP's sector vectors under `cairn check --deep` (services/thoughtmcp/stale_sectors.py), on
the fakes, the embedded store and the AWS adapters: a memory whose sector vectors an older release
of the embedder made (its symbols read as nothing, no vector version) is found and embedded again,
a memory whose vectors are what the embedder makes now is left alone, and recall by a sector other
than the semantic one then finds the memory by its symbol."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cairn.bootstrap import Adapters, Container
from cairn.domain.models import Brain
from cairn.ports.records import Item
from cairn.services.thoughtmcp.models import Filters, NewMemory
from cairn.services.thoughtmcp.sectors import VIEWS, sectors_pk
from tests.fakes.embedder import SymbolHashingEmbedder
from tests.support.shapes import DIM, adapters_for, process

USER = "alice"
FOX = "My favourite animal is the fox 🦊 in the snow"
PLAIN = "Tide tables for the estuary are printed every week"


@pytest.fixture(params=("fakes", "embedded", "aws"))
def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapters]:
    with adapters_for(request.param, request, tmp_path) as built:
        yield built


def remember(c: Container, brain: Brain, text: str) -> str:
    return str(c.thoughts.remember(brain, NewMemory(text, USER, "s1", "emotional"))["memoryId"])


def record(c: Container, brain: Brain, memory_id: str) -> Item | None:
    return c.adapters.records.get(sectors_pk(brain.id, USER), memory_id)


def by_the_fox(c: Container, brain: Brain) -> dict[str, float]:
    """Each memory's similarity to the fox alone, by its emotional sector only."""
    found, _ = c.thoughts.recall(
        brain, USER, text="🦊", filters=Filters(sectors=("emotional",)), min_similarity=0.0, reinforce=False
    )
    return {f.row.id: f.score.similarity for f in found}


def test_a_deep_check_embeds_again_the_sector_vectors_an_older_release_made(
    adapters: Adapters, tmp_path: Path
) -> None:
    old = process(adapters, tmp_path)  # HashingEmbedder: symbols read as nothing, no version
    brain = old.brains.create("thoughts")
    fox, plain = remember(old, brain, FOX), remember(old, brain, PLAIN)
    before = {m: record(old, brain, m) for m in (fox, plain)}
    old_vectors = old.thoughts.sectors.get(brain.id, USER, [fox])[fox]
    assert before[fox] is not None and "version" not in before[fox].data

    c = process(replace(adapters, embedder=SymbolHashingEmbedder(DIM)), tmp_path)  # the upgrade
    assert c.adapters.embedder.model_id == old.adapters.embedder.model_id
    later = remember(c, brain, "A second fox 🦊 crossed the frozen river at dawn")
    assert version(record(c, brain, later)) == "symbols-1"
    before_check = by_the_fox(c, brain)
    assert before_check[fox] <= before_check[plain]  # its emotional vector never read the fox

    reported = c.repair.check(brain, deep=True, repair=False)
    assert record(c, brain, fox) == before[fox]  # a dry run embeds nothing
    found = c.repair.check(brain, deep=True)
    after = record(c, brain, fox)
    assert version(after) == "symbols-1" and after is not None and after.version != before[fox].version
    remade = c.thoughts.sectors.embed(FOX, c.thoughts.rows.get(brain.id, USER, [fox])[fox])
    stored = c.thoughts.sectors.get(brain.id, USER, [fox])[fox]
    for sector in VIEWS:
        np.testing.assert_allclose(stored[sector], remade.vectors[sector], atol=2e-3)  # float16 as stored
    assert float(stored["emotional"] @ old_vectors["emotional"]) < 0.99
    assert record(c, brain, plain) == before[plain]  # untouched: its version, data and all
    after_check = by_the_fox(c, brain)
    assert after_check[fox] > max(before_check[fox], after_check[plain]) + 0.1

    assert reported.stale_vectors == (fox,) and not reported.sound and reported.remade == 0
    assert found.stale_vectors == (fox,) and found.remade == 1
    again = c.repair.check(brain, deep=True)
    assert again.sound and again.stale_vectors == () and again.remade == 0


def version(item: Item | None) -> str:
    return str(item.data.get("version", "")) if item is not None else ""


def test_a_memory_forgotten_after_the_check_gets_no_record_back(adapters: Adapters, tmp_path: Path) -> None:
    old = process(adapters, tmp_path)
    brain = old.brains.create("thoughts")
    fox = remember(old, brain, FOX)
    c = process(replace(adapters, embedder=SymbolHashingEmbedder(DIM)), tmp_path)
    found = c.repair.check(brain, deep=True, repair=False)
    assert found.stale_vectors == (fox,)
    c.thoughts.forget(brain, fox, USER)

    assert c.repair.repair(found).remade == 0
    assert record(c, brain, fox) is None
