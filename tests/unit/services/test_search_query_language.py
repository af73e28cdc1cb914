"""The hybrid search reads a query in the Jeffs Brain query language (services/search/
query_language.py) on the fakes, the embedded store and the AWS adapters: its keyword leg keeps
only what the expression matches, a NOT keeps a document out of the whole answer (the vector leg
included), and a plain question is searched as before."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cairn.bootstrap import Container
from cairn.domain import jeffs_query
from cairn.domain.models import Brain, Chunk
from cairn.ports.chunks import ChunkFilter, ChunkHit
from cairn.services.search import query_language
from cairn.services.search.query_language import without_excluded
from cairn.services.search.service import SearchHit
from tests.support.shapes import DIM, adapters_for, process
from tests.support.word_embedder import WordEmbedder

SHIPPING = WordEmbedder({"deploy": (0, 1.0), "rollout": (0, 1.0), "kubernetes": (0, 1.0)}, model_id="ship-64")
"""Deploying, a rollout and Kubernetes all mean the same to it: the vector leg finds the
Kubernetes note for a question about deploying."""

NOTES = {  # a folder each: notes of one folder lend each other context words (documents/siblings.py)
    "k8s/steps.md": "Kubernetes rollout steps for the billing cluster.",
    "manual/deploy.md": "Deploy the billing service by hand with rsync.",
    "office/move.md": "The New York office moved to a new floor.",
    "team/york.md": "York is new to the team this spring.",
    "lunch/menu.md": "Lunch menu for Friday.",
}


@pytest.fixture(params=["fakes", "embedded", "aws"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Container, Brain]]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        c = process(replace(adapters, embedder=SHIPPING), tmp_path)
        brain = c.brains.create("notes")
        for path, text in NOTES.items():
            c.documents.write(brain, path, text.encode())
        yield c, brain


def search(store: tuple[Container, Brain], query: str) -> list[SearchHit]:
    c, brain = store
    return c.search.search(brain, query, top_k=10, count_access=False).hits


def keyword(hits: list[SearchHit]) -> list[str]:
    """The paths the keyword leg found, in its order."""
    ranked = [h for h in hits if h.component_scores["bm25_rank"] is not None]
    return [h.path for h in sorted(ranked, key=lambda h: h.component_scores["bm25_rank"] or 0)]


def test_not_keeps_a_document_out_even_when_the_vector_leg_finds_it(store: tuple[Container, Brain]) -> None:
    hits = search(store, "deploy NOT kubernetes")
    assert "k8s/steps.md" not in [h.path for h in hits]
    assert hits[0].path == "manual/deploy.md"
    assert keyword(hits) == ["manual/deploy.md"]
    # in lower case `not` is a word of a plain question: the Kubernetes note is an answer
    assert "k8s/steps.md" in [h.path for h in search(store, "deploy not kubernetes")]


def test_a_query_left_with_only_its_exclusions_has_no_keyword_leg_and_still_excludes(
    store: tuple[Container, Brain],
) -> None:
    hits = search(store, "the NOT kubernetes")
    assert hits and keyword(hits) == []
    assert "k8s/steps.md" not in [h.path for h in hits]


def test_a_phrase_needs_its_words_side_by_side(store: tuple[Container, Brain]) -> None:
    assert keyword(search(store, '"new york"')) == ["office/move.md"]
    assert sorted(keyword(search(store, "new york"))) == ["office/move.md", "team/york.md"]


def test_and_needs_both_and_a_prefix_finds_the_words_it_starts(store: tuple[Container, Brain]) -> None:
    assert keyword(search(store, "billing AND rsync")) == ["manual/deploy.md"]
    assert keyword(search(store, "kube*")) == ["k8s/steps.md"]
    assert keyword(search(store, "kube* OR lunch")) in (
        ["k8s/steps.md", "lunch/menu.md"],
        ["lunch/menu.md", "k8s/steps.md"],
    )


def test_the_vector_leg_reads_the_words_without_operators_or_exclusions(
    store: tuple[Container, Brain],
) -> None:
    # "lunch NOT deploy": the vector leg embeds "lunch", so the deploy-like notes are not its nearest
    hits = search(store, "lunch NOT deploy")
    assert hits[0].path == "lunch/menu.md"
    assert "manual/deploy.md" not in [h.path for h in hits]
    assert hits[0].highlights == ["Lunch menu for Friday."]


@pytest.mark.parametrize("shape", ["fakes", "embedded", "aws"])
def test_a_long_document_full_of_the_excluded_word_hides_no_other(
    shape: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pool of 3 chunks per check; a book holding "kubernetes" in 5 chunks, its candidate
    # chunk (a glossary) not; and a runbook whose candidate chunk is about rsync and whose second
    # chunk names kubernetes
    monkeypatch.setattr(query_language, "EXCLUSION_POOL", 3)
    with adapters_for(shape, request, tmp_path) as adapters:
        book = [_chunk("doc_book", n, f"Chapter {n}: pods and kubernetes services.") for n in range(5)]
        book.append(_chunk("doc_book", 5, "Glossary of terms used in this book."))
        runbook = [
            _chunk("doc_runbook", 0, "Deploy the billing service by hand with rsync."),
            _chunk("doc_runbook", 1, "Later we moved it to Kubernetes."),
        ]
        plain = _chunk("doc_plain", 0, "Deploy the invoices service with rsync too.")
        every = [*book, *runbook, plain]
        adapters.chunks.upsert(every, np.eye(len(every), DIM, dtype=np.float32))
        hits = [ChunkHit(c, 1.0) for c in (book[5], runbook[0], plain)]
        # When the candidates are checked against NOT kubernetes
        excluded = jeffs_query.expression("x NOT kubernetes").excluded
        kept = without_excluded(adapters.chunks, excluded, ChunkFilter(brain_ids=("brn_x",)), hits)
        # Then only the document that never names it is kept
        assert [h.chunk.document_id for h in kept] == ["doc_plain"]


def _chunk(document_id: str, ordinal: int, text: str) -> Chunk:
    return Chunk(
        id=f"chk_{document_id.removeprefix('doc_')}_{ordinal}",
        brain_id="brn_x",
        document_id=document_id,
        path=f"{document_id.removeprefix('doc_')}.md",
        ordinal=ordinal,
        text=text,
        end=len(text),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
