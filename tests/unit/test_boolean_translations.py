"""What a boolean query becomes on each store: the FTS5 expression and the OpenSearch bool query
(the contract suite checks what they find; these pin what is sent)."""

from __future__ import annotations

import sqlite3

import pytest

from cairn.adapters.aws.opensearch_queries import bm25_query, boolean_clause, filter_clauses
from cairn.adapters.local.chunk_schema import TOKENIZER
from cairn.adapters.local.fts_boolean import fts5_expression
from cairn.domain.boolean_query import Phrase, Term, parse
from cairn.domain.errors import InvalidInput
from cairn.ports.chunks import ChunkFilter

FIELDS = ["title", "tag_words", "text", "context"]


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("heron", '"heron"'),
        ('"new york" city', '("new york" AND "city")'),
        ("heron OR crane", '("heron" OR "crane")'),
        ("heron -river -marsh", '(("heron") NOT ("river" OR "marsh"))'),
        ("(heron OR crane) NOT (river marsh)", '((("heron" OR "crane")) NOT (("river" AND "marsh")))'),
        ("crane OR heron NOT river", '("crane" OR (("heron") NOT ("river")))'),
        ("NEAR(zebra) title:zebra", '("near" AND "zebra" AND "title zebra")'),
    ],
)
def test_fts5_expression_quotes_every_word_and_writes_not_as_binary(text: str, expression: str) -> None:
    assert fts5_expression(parse(text)) == expression
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, text, context, tokenize='{TOKENIZER}')")
    conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()  # valid FTS5


def test_a_quote_in_a_hand_built_tree_is_refused_not_sent() -> None:
    with pytest.raises(InvalidInput):
        fts5_expression(Term('a" OR "b'))
    with pytest.raises(InvalidInput):
        bm25_query(["a"], ChunkFilter(("b1",)), boolean=Phrase(("a", 'b"')))


def test_opensearch_bool_query_nests_must_should_and_must_not_on_the_bm25_fields() -> None:
    clause = boolean_clause(parse('"new york" (heron OR crane) NOT river'))
    assert clause == {
        "bool": {
            "must": [
                {"multi_match": {"query": "new york", "fields": FIELDS, "type": "phrase"}},
                {
                    "bool": {
                        "should": [
                            {"multi_match": {"query": "heron", "fields": FIELDS, "operator": "and"}},
                            {"multi_match": {"query": "crane", "fields": FIELDS, "operator": "and"}},
                        ],
                        "minimum_should_match": 1,
                    }
                },
            ],
            "must_not": [{"multi_match": {"query": "river", "fields": FIELDS, "operator": "and"}}],
        }
    }


def test_the_bm25_leg_scores_the_positive_terms_and_filters_on_the_boolean_query() -> None:
    query = parse("heron NOT river")
    leg = bm25_query(["heron"], ChunkFilter(("b1",)), boolean=query)
    assert leg["bool"]["must"][0]["multi_match"]["query"] == "heron"
    assert leg["bool"]["filter"][-1] == boolean_clause(query)


def test_any_tags_are_one_terms_filter_per_group() -> None:
    clauses = filter_clauses(ChunkFilter(("b1",), tags=("x",), any_tags=(("red", "blue", "red"), ("dog",))))
    assert {"term": {"tags": "x"}} in clauses
    assert {"terms": {"tags": ["red", "blue"]}} in clauses
    assert {"terms": {"tags": ["dog"]}} in clauses
