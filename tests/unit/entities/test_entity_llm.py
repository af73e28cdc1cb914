"""The Generator-backed entity extractor (services/memory/entity_llm.py): the rules' mentions first, the
model's added with their aliases, its junk dropped, and the rules alone whenever the model fails."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import MemoryType
from cairn.ports.generator import Answer, GenerationError, GenerationEvent, Generator, Passage
from cairn.services.memory.entities import ENTITY_TYPES, MAX_MENTIONS, Mention
from cairn.services.memory.entity_llm import GeneratorEntityExtractor, entity_extractor_for
from cairn.services.memory.entity_rules import RuleEntityExtractor
from cairn.services.memory.memory_model import MemoryInput
from tests.fakes.container import fake_adapters, fake_container
from tests.fakes.generator import ScriptedGenerator

TEXT = "Moved the Acme billing jobs to Postgres. Maria Lopez runs the Atlas rollout."
RULES = RuleEntityExtractor().extract(TEXT)
SECRET = "Lopez"  # a word of the memory that must never reach the log


def replying(reply: Any) -> ScriptedGenerator:
    return ScriptedGenerator.answer(
        reply if isinstance(reply, str) else json.dumps(reply), model_id="llama-test"
    )


def names(found: Sequence[Mention]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(m.name, m.type, m.aliases) for m in found]


def test_model_entities_follow_the_rules_with_their_aliases() -> None:
    model = replying(
        [
            {"name": "Atlas", "type": "system", "aliases": ["Atlas rollout", "atlas", "Atlas rollout"]},
            {"name": "Maria Lopez", "type": "person", "aliases": ["Maria"]},
            {"name": "Postgres", "type": "technology"},  # an alias of the rules' PostgreSQL
            {"name": "postgresql", "type": "system"},  # the rules' name, another case and type
        ]
    )
    found = GeneratorEntityExtractor(model).extract(TEXT)

    assert RULES and found[: len(RULES)] == RULES  # the rules' mentions first, untouched
    assert names(found[len(RULES) :]) == [
        ("Atlas", "system", ("Atlas rollout",)),
        ("Maria Lopez", "person", ("Maria",)),
    ]
    question, passages = model.calls[0]
    assert "JSON" in question and all(f'"{t}"' in question for t in ENTITY_TYPES)
    assert [p.text for p in passages] == [TEXT]


def test_invalid_entries_are_dropped_and_the_rest_capped() -> None:
    reply = [
        {"name": "Pluto", "type": "planet"},
        {"name": "x" * 201, "type": "system"},
        {"name": "  ", "type": "person"},
        {"type": "person"},
        {"name": 42, "type": "person"},
        "Redis",
        {"name": "Ledger  Sync", "type": "workflow", "aliases": ["y" * 201, 7, "LS"]},
        {"name": "ledger sync", "type": "workflow"},
    ] + [{"name": f"tool {i}", "type": "technology"} for i in range(80)]
    found = GeneratorEntityExtractor(replying(reply)).extract(TEXT)

    added = found[len(RULES) :]
    assert added[0] == Mention("Ledger Sync", "workflow", aliases=("LS",))
    assert all(m.type in ENTITY_TYPES and 0 < len(m.name) <= 200 for m in added)
    assert len(added) == MAX_MENTIONS  # at most 50 from the model
    assert added[-1].name == "tool 48"


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n[{"name": "Atlas", "type": "system"}]\n```',
        'Here they are: [{"name": "Atlas", "type": "system"}] [1]',
        '{"entities": [{"name": "Atlas", "type": "system"}]}',
    ],
)
def test_a_fenced_or_wrapped_array_is_read(reply: str) -> None:
    found = GeneratorEntityExtractor(replying(reply)).extract(TEXT)
    assert found == [*RULES, Mention("Atlas", "system")]


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (replying("Atlas is a system mentioned by Maria Lopez."), "no JSON in the reply"),
        (replying('[{"name": "Atlas", "type": "system"'), "the reply is not valid JSON"),
        (replying({"name": "Atlas", "type": "system"}), "the reply is not a JSON array"),
        (
            ScriptedGenerator(GenerationError("generation_failed", f"upstream said {SECRET}")),
            "generation_failed",
        ),
        (ScriptedGenerator(RuntimeError(f"socket closed near {SECRET}")), "RuntimeError"),
    ],
)
def test_a_failing_model_leaves_the_rules_and_logs_without_the_text(
    model: Generator, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="cairn.services.memory.entity_llm"):
        found = GeneratorEntityExtractor(model).extract(TEXT)

    assert found == RULES
    assert len(caplog.records) == 1 and why in caplog.text
    assert SECRET not in caplog.text and "Atlas" not in caplog.text


class Slow:
    model_id = "slow-model"

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        raise AssertionError("not streamed")
        yield  # pragma: no cover

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        await anyio.sleep(30)
        return Answer("[]")


def test_a_model_that_takes_too_long_leaves_the_rules(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="cairn.services.memory.entity_llm"):
        found = GeneratorEntityExtractor(Slow(), timeout_s=0.05).extract(TEXT)

    assert found == RULES and "no reply in time" in caplog.text


def test_the_offline_generator_gets_the_rules_alone() -> None:
    assert isinstance(fake_container().entities.extractor, RuleEntityExtractor)
    assert isinstance(entity_extractor_for(replying("[]")), GeneratorEntityExtractor)


def with_model(tmp_path: Path, model: Generator) -> Container:
    adapters = replace(fake_adapters(), generator=model)
    return build_container(Settings(data_dir=tmp_path / "data", generator="openai"), adapters)


def test_a_store_with_a_model_links_its_entities(tmp_path: Path) -> None:
    container = with_model(
        tmp_path, replying([{"name": "Atlas", "type": "system", "aliases": ["Atlas rollout"]}])
    )
    assert isinstance(container.entities.extractor, GeneratorEntityExtractor)
    brain = container.brains.create("Team memory")
    stored = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content=TEXT, client_id="acme")
    )

    by_alias = container.entities.get(brain, "atlas ROLLOUT")
    assert (by_alias.name, by_alias.kind) == ("Atlas", "system")
    linked = container.entities.memories(brain, "Atlas").links
    assert [ln.memory_id for ln in linked] == [stored.memory.id]
    assert {e.name for e in container.entities.list(brain)} == {"acme", "PostgreSQL", "Atlas"}


def test_a_store_never_fails_because_the_model_did(tmp_path: Path) -> None:
    container = with_model(tmp_path, ScriptedGenerator(GenerationError("generation_timeout", "slow")))
    brain = container.brains.create("Team memory")
    container.memories.store(brain, MemoryInput(type=MemoryType.event, content=TEXT, client_id="acme"))

    assert {e.name for e in container.entities.list(brain)} == {"acme", "PostgreSQL"}
