"""A concept's node is cut to what a link node may hold, alike when indexed and when looked up: a
long name of non-ASCII letters is linked and found, not refused (services/mnemosyne/concepts.py)."""

from __future__ import annotations

import json

from cairn.services.memory.entity_llm import GeneratorEntityExtractor
from cairn.services.mnemosyne.concept_rules import ConceptRules
from tests.fakes.generator import ScriptedGenerator
from tests.unit.services.test_concepts import BRAIN, chunk, concepts_of, graph

NAME = "東京湾岸" * 45  # 180 characters (a model's names may hold 200), 540 bytes in UTF-8


def test_a_concept_over_a_nodes_bytes_is_linked_cut_and_found_by_the_same_cut() -> None:
    model = ScriptedGenerator.answer(json.dumps([{"name": NAME, "type": "system"}]), model_id="m")
    g, links = graph(ConceptRules(GeneratorEntityExtractor(model)))
    text = f"The team named it {NAME} in the end."
    g.index(BRAIN, text, [chunk(0, text)])
    [node] = concepts_of(links, "chk_doc1_0")
    assert len(node.encode()) <= 512 and NAME.startswith(node.removeprefix("concept:"))

    hits = g.search([BRAIN], f"what is {NAME}", limit=5, sizes={BRAIN: 10})
    assert [h.chunk_id for h in hits] == ["chk_doc1_0"]
