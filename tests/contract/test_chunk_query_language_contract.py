"""ChunkIndex contract for the Jeffs Brain query language (domain/jeffs_query.py): a query's
expression keeps the same chunks on every adapter (the fake, SQLite, OpenSearch on a real cluster
here and on the fake cluster in tests/unit/aws/test_opensearch_contract.py): a phrase's words side
by side, a prefix any word it starts, AND both, NOT neither, operands alone either."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.domain.boolean_query import Prefix
from cairn.domain.jeffs_query import expression
from cairn.ports.chunks import ChunkIndex
from tests.contract import test_chunk_index_contract as contract
from tests.contract.test_chunk_index_contract import axis, chunk, query

make_index = contract.make_index  # the suite's adapters (its fixture), collected here


@pytest.fixture
def index(make_index: contract.Factory) -> ChunkIndex:
    return make_index()


NOTES = {
    "a": "kubernetes deployment of the billing service",
    "b": "manual deployment of the billing service with docker",
    "c": "the new york office moved",
    "d": "york is new to the team",
    "e": "a kubectl cheat sheet",
    "f": "a cube of ice",
    "g": "send the e-mail today",
    "h": "the email inbox is full",
}


def notes(index: ChunkIndex) -> None:
    chunks = [chunk(cid, text) for cid, text in NOTES.items()]
    index.upsert(chunks, np.stack([axis(i) for i in range(len(chunks))]))


def found(index: ChunkIndex, text: str) -> list[str]:
    """The ids the query's expression keeps (the keyword leg alone), sorted."""
    tree = expression(text).match
    assert tree is not None
    hits = index.search(query("", None, boolean=tree, top_k=50))
    assert all(h.bm25_rank is not None for h in hits)
    return sorted(h.chunk.id for h in hits)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"new york"', ["c"]),  # d holds both words, not side by side
        ('"york new"', []),
        ("new AND york", ["c", "d"]),
        ("kube*", ["a", "e"]),  # not the cube
        ("KUBE* AND cheat", ["e"]),
        ("deployment NOT kubernetes", ["b"]),
        ("deployment NOT kube*", ["b"]),
        ('billing NOT "manual deployment"', ["a"]),
        ("billing AND docker", ["b"]),
        ("docker OR ice", ["b", "f"]),
        ("docker ice", ["b", "f"]),  # no operator between them: either
        ("NOT docker billing", ["a", "b"]),  # a leading NOT is dropped, its operand kept
        ("billing docker NOT kubernetes", ["b"]),  # NOT excludes from the whole query
        ("e-mail", ["g", "h"]),  # the words side by side, or joined
        ("e-mail NOT inbox", ["g"]),
        ('"walrus tusk" OR narwhal*', []),
    ],
)
def test_a_query_in_the_language_keeps_exactly_what_its_expression_matches(
    index: ChunkIndex, text: str, expected: list[str]
) -> None:
    notes(index)
    assert found(index, text) == expected


def test_a_prefix_alone_is_ranked_and_scored(index: ChunkIndex) -> None:
    notes(index)
    hits = index.search(query("", None, boolean=Prefix("kube"), top_k=50))
    assert sorted(h.chunk.id for h in hits) == ["a", "e"]
    assert [h.bm25_rank for h in hits] == [1, 2]
    assert all(h.bm25_score is not None and h.bm25_score > 0 for h in hits)


def test_a_prefix_finds_words_in_the_title_and_tags_too(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("titled", "plain text", title="Kubernetes notes"),
            chunk("tagged", "plain text", tags=["topic:kubernetes"]),
            chunk("neither", "plain text"),
        ],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    assert found(index, "kube*") == ["tagged", "titled"]
