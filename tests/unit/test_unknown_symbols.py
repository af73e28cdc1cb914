"""Symbols the embedded model's vocabulary lacks ([UNK] tokens: emoji, runes) get a vector of their
own (adapters/local/unknown_symbols.py): before, every text made only of them had one vector, so a
question of emoji matched every note of other emoji at cosine 1.0 and the calibrated relevance
called it a match, and which symbols a note held counted for nothing."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cairn.adapters.local.onnx_embedder import OnnxEmbedder
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain
from cairn.services.search.relevance import GOOD_MATCH

ENGLISH = [
    "The deploy pipeline runs on GitHub Actions.",
    "Alice prefers tea over coffee in the mornings.",
    "The rocket launch is scheduled for Friday.",
]


@pytest.fixture(scope="module")
def model() -> OnnxEmbedder:
    return OnnxEmbedder()


def cosines(model: OnnxEmbedder, query: str, texts: list[str]) -> list[float]:
    vectors = model.embed([query, *texts])
    return [float(v @ vectors[0]) for v in vectors[1:]]


def test_unreadable_texts_of_other_symbols_are_not_alike(model: OnnxEmbedder) -> None:
    assert max(cosines(model, "🚀🚀", ["🎉🎉", "ᚠᚢᚦ", "𐌰𐌱𐌲", "😀 😃 😄"])) < 0.3


def test_the_same_symbols_are_alike_however_often_and_in_whatever_order(model: OnnxEmbedder) -> None:
    same, reordered, shared_half, with_selector = cosines(model, "🎉", ["🎉🎉🎉", "🎉", "🎉🚀", "🎉\ufe0f"])
    assert same > 0.999 and reordered > 0.999 and with_selector > 0.999
    assert 0.5 < shared_half < 0.9
    rune_a, rune_b = cosines(model, "ᚠᚢᚦ", ["ᚦᚢᚠ", "ᚠᚢᚦ ᚨᚱ"])
    assert rune_a > 0.999 and 0.6 < rune_b < 0.95


def test_an_unreadable_text_is_far_from_what_the_model_reads(model: OnnxEmbedder) -> None:
    assert max(abs(c) for c in cosines(model, "🚀🚀", ENGLISH)) < 0.3


def test_a_text_the_model_reads_whole_keeps_the_models_vector(model: OnnxEmbedder) -> None:
    texts = ["deploy", "日本語のメモ", "Ünïcödé café", "a sentence about a rocket launch"]
    together = model.embed(texts)
    encodings = model._tokenizer.encode_batch(texts)
    for row, encoding in zip(together, encodings, strict=True):
        np.testing.assert_allclose(row, model._run([encoding])[0], atol=1e-6)


def test_symbols_among_words_move_the_vector_by_their_share(model: OnnxEmbedder) -> None:
    mostly, rarely = "party 🎉🎉", "Great job on the release today, everyone, well done 🎉"
    vectors = model.embed([mostly, rarely])
    plain = [model._run([model._tokenizer.encode(t)])[0] for t in (mostly, rarely)]
    assert float(vectors[1] @ plain[1]) > 0.99  # one token in fourteen
    assert float(vectors[0] @ plain[0]) < 0.8  # half the tokens
    assert cosines(model, "🎉", [mostly, rarely]) == pytest.approx([0.7, 0.07], abs=0.1)


def test_a_symbol_vector_is_unit_length_and_the_same_in_every_batch(model: OnnxEmbedder) -> None:
    texts = ["🎉", "a long sentence about deployments and pipelines", "ᚠᚢᚦ", "🎉"]
    together = model.embed(texts)
    alone = np.vstack([model.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # Stored vectors depend on it: the direction of a symbol never changes between releases.
    np.testing.assert_allclose(together[0][:3], [0.0706, 0.07933, 0.0268], atol=1e-4)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Container, Brain]]:
    c = build_container(Settings(data_dir=tmp_path_factory.mktemp("unread")))
    brain = c.brains.create("symbols")
    for n, text in enumerate([*ENGLISH, "🎉🎉", "ᚠᚢᚦ ᚨᚱ", "Favourite emoji: 🦊"]):
        c.documents.write(brain, f"notes/{n}.md", text.encode())
    yield c, brain


def relevances(c: Container, brain: Brain, query: str) -> dict[str, float]:
    hits = c.search.search(brain, query, top_k=10, count_access=False).hits
    return {h.path: float(h.component_scores["relevance"] or 0.0) for h in hits}


def test_a_question_of_symbols_no_note_holds_finds_nothing_relevant(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    found = relevances(c, brain, "🚀🚀")
    assert found and max(found.values()) < 0.1 < GOOD_MATCH


def test_a_question_of_a_notes_symbols_finds_it(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    found = relevances(c, brain, "🎉")
    best = max(found, key=lambda path: found[path])
    assert best == "notes/3.md" and found[best] > GOOD_MATCH
    assert sorted(found.values())[-2] < 0.1


def test_a_symbol_among_words_finds_its_note_first(stack: tuple[Container, Brain]) -> None:
    c, brain = stack
    found = relevances(c, brain, "🦊")
    ranked = sorted(found, key=lambda path: -found[path])
    assert ranked[0] == "notes/5.md"
    assert found[ranked[1]] < 0.1


def test_a_long_word_of_known_letters_is_left_to_the_model(model: OnnxEmbedder) -> None:
    key, other = "AVvXsEh" * 20, "Qm9vayBub3Rlcw" * 10  # each one [UNK]: over 100 characters
    together = model.embed([key, f"the key {key}", other])
    for text, row in zip([key, f"the key {key}", other], together, strict=True):
        np.testing.assert_allclose(row, model._run([model._tokenizer.encode(text)])[0], atol=1e-6)
