"""The vectors of questions are kept (adapters/vector_cache.py): a question asked again is not
embedded again, the answers are what the model alone gives, and documents are not kept."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.vector_cache import LONGEST, VectorCache
from cairn.auth import access
from cairn.auth.principal import READ, Principal, Via
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.ports.embedder import Vectors
from tests.fakes.container import fake_adapters
from tests.fakes.embedder import HashingEmbedder
from tests.support.threads import run_together


class Counting(HashingEmbedder):
    """The hashing embedder, recording every call's texts."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_a_text_is_embedded_once_and_its_vector_is_the_models() -> None:
    model = Counting()
    cache = VectorCache(model, capacity=8)
    first = cache.embed(["where is the runbook"])
    again = cache.embed(["where is the runbook"])
    assert model.calls == [["where is the runbook"]]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(again, HashingEmbedder(64).embed(["where is the runbook"]))
    assert (cache.model_id, cache.dimension) == (model.model_id, model.dimension)


def test_only_the_missing_texts_of_a_call_reach_the_model_in_their_order() -> None:
    model = Counting()
    cache = VectorCache(model, capacity=8)
    cache.embed(["b"])
    out = cache.embed(["a", "b", "c", "a"])
    assert model.calls == [["b"], ["a", "c"]]  # "a" twice in the call: embedded once
    np.testing.assert_array_equal(out, HashingEmbedder(64).embed(["a", "b", "c", "a"]))
    assert cache.embed([]).shape == (0, 64)


def test_the_least_recently_used_text_leaves_first() -> None:
    model = Counting()
    cache = VectorCache(model, capacity=2)
    cache.embed(["one"])
    cache.embed(["two"])
    cache.embed(["one"])  # used again: "two" is now the oldest
    cache.embed(["three"])
    model.calls.clear()
    cache.embed(["one", "three"])
    assert model.calls == []
    cache.embed(["two"])
    assert model.calls == [["two"]]


def test_what_a_caller_does_to_its_answer_does_not_reach_the_next_caller() -> None:
    cache = VectorCache(Counting(), capacity=4)
    mine = cache.embed(["q"])
    mine[0, :] = 0.0
    np.testing.assert_array_equal(cache.embed(["q"]), HashingEmbedder(64).embed(["q"]))


def test_a_text_longer_than_any_question_is_not_kept() -> None:
    model = Counting()
    cache = VectorCache(model, capacity=4)
    long = "word " * (LONGEST // 5 + 1)
    cache.embed([long])
    cache.embed([long])
    assert model.calls == [[long], [long]]


def test_a_cache_of_no_texts_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        VectorCache(Counting(), capacity=0)


def test_threads_asking_at_once_all_get_the_models_vectors() -> None:
    cache = VectorCache(Counting(), capacity=16)
    texts = [f"question {i % 20}" for i in range(400)]
    expected = HashingEmbedder(64).embed(texts)
    wrong: list[int] = []

    def ask(offset: int) -> None:
        for i in range(offset, len(texts), 4):
            if not np.array_equal(cache.embed([texts[i]])[0], expected[i]):
                wrong.append(i)

    run_together(ask, range(4))
    assert wrong == []


def _counted_container(tmp_path: Path, kept: int) -> tuple[Counting, Container]:
    adapters = fake_adapters()
    model = Counting(adapters.embedder.dimension)
    adapters.embedder = model
    return model, build_container(Settings(data_dir=tmp_path, query_vector_cache=kept), adapters)


def test_a_question_searched_again_is_not_embedded_again_and_finds_the_same(tmp_path: Path) -> None:
    model, container = _counted_container(tmp_path, kept=64)
    brain = container.brains.create("Team", slug="team")
    container.ingest.remember(brain, "The deploy runbook lives in the ops wiki.", path="notes/runbook.md")
    container.ingest.remember(brain, "Lunch is at noon on Fridays.", path="notes/lunch.md")
    model.calls.clear()
    first = container.search.search(brain, "where is the deploy runbook")
    again = container.search.search(brain, "where is the deploy runbook")
    assert model.calls == [["where is the deploy runbook"]]
    assert [(h.path, h.score) for h in again.hits] == [(h.path, h.score) for h in first.hits]
    assert first.hits[0].path == "notes/runbook.md"


def test_documents_written_between_two_searches_do_not_push_the_question_out(tmp_path: Path) -> None:
    model, container = _counted_container(tmp_path, kept=2)
    brain = container.brains.create("Team", slug="team")
    container.ingest.remember(brain, "Lunch is at noon on Fridays.", path="notes/lunch.md")
    container.search.search(brain, "when is lunch")
    for i in range(5):
        container.ingest.remember(brain, f"Standup note {i}: the build is green.", path=f"notes/{i}.md")
    model.calls.clear()
    container.search.search(brain, "when is lunch")
    assert model.calls == []


def test_with_no_cache_every_search_embeds_its_question(tmp_path: Path) -> None:
    model, container = _counted_container(tmp_path, kept=0)
    brain = container.brains.create("Team", slug="team")
    container.ingest.remember(brain, "Lunch is at noon on Fridays.", path="notes/lunch.md")
    model.calls.clear()
    container.search.search(brain, "when is lunch")
    container.search.search(brain, "when is lunch")
    assert model.calls == [["when is lunch"], ["when is lunch"]]


def test_a_kept_question_answers_only_the_caller_that_asked_it() -> None:
    model = Counting()
    caller = ["alice"]
    cache = VectorCache(model, capacity=8, partition=lambda: caller[0])
    cache.embed(["is the takeover of Globex on"])
    caller[0] = "mallory"
    cache.embed(["is the takeover of Globex on"])  # not answered from alice's: no faster either
    caller[0] = "alice"
    cache.embed(["is the takeover of Globex on"])
    assert model.calls == [["is the takeover of Globex on"]] * 2


def test_the_searches_keep_questions_per_principal(tmp_path: Path) -> None:
    model, container = _counted_container(tmp_path, kept=64)
    questions = container.search.embedder
    alice = Principal("acme", "alice", frozenset({READ}), Via.jwt)
    bob = Principal("acme", "bob", frozenset({READ}), Via.jwt)
    alice_elsewhere = Principal("globex", "alice", frozenset({READ}), Via.api_key)
    for principal in (alice, alice, bob, alice_elsewhere, bob):
        with access.acting_as(principal):
            questions.embed(["what is the layoff plan"])
    questions.embed(["what is the layoff plan"])  # outside any request: the server's own lookups
    assert len(model.calls) == 4  # alice, bob, alice of another tenant, the server
