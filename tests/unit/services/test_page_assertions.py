"""brain_check with a language model (services/gbrain/page_assertions.py): the model's claims join the
rules', are asked once per page version and model, within a per-check budget, never by stats, and
any failure of the model leaves the rules' result and a log line that quotes no page."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.entrypoints.mcp.gbrain.tools import all_pages, asserted
from cairn.ports.generator import (
    Answer,
    Delta,
    Done,
    GenerationError,
    GenerationEvent,
    Generator,
    Passage,
    collect,
)
from cairn.services.gbrain.page_assertions import claims_from_reply
from tests.fakes.container import fake_adapters

WORKS_AT = "Alice has conflicting works_at assertions: Acme Corp vs Globex Inc"
SECRET = "Zanzibar"  # a word of a page that must never reach the log


class PageModel:
    """Answers each page (by its passage's slug) with the JSON scripted for it; `fail` raises."""

    def __init__(self, replies: Mapping[str, object], *, fail: BaseException | None = None) -> None:
        self.replies: dict[str, object] = dict(replies)
        self.fail = fail
        self.asked: list[str] = []

    @property
    def model_id(self) -> str:
        return "llama-test"

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        slug = passages[0].chunk_id
        self.asked.append(slug)
        if self.fail is not None:
            raise self.fail
        reply = self.replies.get(slug, [])
        text = reply if isinstance(reply, str) else json.dumps(reply)
        yield Delta(text)
        yield Done(text, self.model_id)

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))


def container(tmp_path: Path, model: Generator, **settings: object) -> Container:
    adapters = replace(fake_adapters(), generator=model)
    c = build_container(Settings(data_dir=tmp_path / "data", **settings), adapters)  # type: ignore[arg-type]
    c.brains.create("default")
    return c


def put(c: Container, slug: str, body: str, version: int | None = None) -> None:
    c.pages.put(slug, f"---\ntitle: {slug.split('/')[-1].title()}\n---\n{body}\n", version)


def check(c: Container, focus: str | None = None) -> list[tuple[str, str, str]]:
    found = c.assertions.contradictions(asserted(all_pages(c)), focus=focus)
    return [(f.page_slug, f.other_page_slug, f.description) for f in found]


OFFICES = {
    "default::people/a": [{"subject": "Alice", "attribute": "Office", "value": "Berlin."}],
    "default::people/b": {"assertions": [{"subject": "alice", "attribute": "office", "value": "Paris"}]},
}


def test_the_models_claims_find_what_the_rules_cannot(tmp_path: Path) -> None:
    model = PageModel(OFFICES)
    c = container(tmp_path, model)
    put(c, "people/a", "Alice runs the team from the Berlin office.")  # no rule reads this
    put(c, "people/b", "These days Alice leads from Paris.")

    assert check(c) == [
        ("default::people/a", "default::people/b", "Alice has conflicting office assertions: Berlin vs Paris")
    ]
    assert sorted(model.asked) == ["default::people/a", "default::people/b"]
    assert c.assertions.stats(asserted(all_pages(c))) == (2, 1)


def test_offline_the_rules_alone_answer_and_nothing_is_kept(tmp_path: Path) -> None:
    c = build_container(Settings(data_dir=tmp_path / "data"), fake_adapters())  # extractive generator
    c.brains.create("default")
    put(c, "people/a", "Alice runs the team from the Berlin office.")
    put(c, "people/b", "These days Alice leads from Paris.")
    assert check(c) == []
    assert not c.assertions.uses_model
    assert not [k for k in c.adapters.records.rows if k[0].startswith("assertions#")]  # type: ignore[attr-defined]


def test_asked_once_per_version_and_again_after_a_write(tmp_path: Path) -> None:
    model = PageModel(OFFICES)
    c = container(tmp_path, model)
    put(c, "people/a", "Alice runs the team from the Berlin office.")
    put(c, "people/b", "These days Alice leads from Paris.")
    first = check(c)
    model.asked.clear()
    assert check(c) == first and model.asked == []  # kept for this version and model

    model.replies["default::people/b"] = [{"subject": "Alice", "attribute": "office", "value": "Berlin"}]
    put(c, "people/b", "Alice moved back to Berlin.", 1)
    assert check(c) == [] and model.asked == ["default::people/b"]  # only the rewritten page


def test_a_check_asks_about_at_most_its_budget_focus_first_and_stats_never_ask(tmp_path: Path) -> None:
    model = PageModel(OFFICES)
    c = container(tmp_path, model, assertion_model_pages_per_check=1)
    put(c, "people/a", "Alice runs the team from the Berlin office.")
    put(c, "people/b", "These days Alice leads from Paris.")

    assert c.assertions.stats(asserted(all_pages(c))) == (0, 0) and model.asked == []
    assert check(c, focus="default::people/b") == [] and model.asked == ["default::people/b"]
    assert check(c) != [] and model.asked == [
        "default::people/b",
        "default::people/a",
    ]  # the next check fills in


@pytest.mark.parametrize(
    "fail", [GenerationError("generation_failed", "boom"), TimeoutError()], ids=["error", "timeout"]
)
def test_a_failing_model_leaves_the_rules_and_quotes_nothing(
    tmp_path: Path, fail: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    model = PageModel(OFFICES, fail=fail)
    c = container(tmp_path, model)
    put(c, "people/a", f"Alice works at Acme Corp. She flew to {SECRET}.")
    put(c, "people/b", "Alice works at Globex Inc.")
    with caplog.at_level(logging.WARNING):
        found = check(c)
    assert found == [("default::people/a", "default::people/b", WORKS_AT)]
    assert "rules' assertions are kept" in caplog.text and SECRET not in caplog.text
    model.asked.clear()
    check(c)
    assert len(model.asked) == 2  # a failure is not kept: the next check asks again


def test_malformed_replies_count_as_failures_and_junk_triples_are_dropped(tmp_path: Path) -> None:
    model = PageModel({"default::people/a": "I think Alice is in Berlin", "default::people/b": "[1, 2"})
    c = container(tmp_path, model)
    put(c, "people/a", "Alice runs the team from the Berlin office.")
    put(c, "people/b", "These days Alice leads from Paris.")
    assert check(c) == []

    kept = claims_from_reply(
        json.dumps(
            [
                {"subject": "Alice", "attribute": "office", "value": "Berlin"},
                {"attribute": "role", "value": "CEO"},  # no subject: the page's own
                {"subject": "Alice", "attribute": "title", "value": "Boss"},  # bookkeeping
                {"subject": "it", "attribute": "colour", "value": "red"},  # a pronoun
                {"subject": "Alice", "attribute": "bio", "value": " ".join(["word"] * 20)},  # too long
                {"subject": "Alice", "attribute": 3, "value": "x"},
                "Alice is here",
            ]
        ),
        "Alice Page",
    )
    assert [(a.subject, a.attribute, a.value) for a in kept] == [
        ("Alice", "office", "Berlin"),
        ("Alice Page", "role", "CEO"),
    ]
