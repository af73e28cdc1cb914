"""The Jeffs Brain query language's parser (domain/jeffs_query.py): the spec's worked examples and
the rules around them."""

from __future__ import annotations

import pytest

from cairn.domain.boolean_query import And, BoolQuery, Not, Or, Phrase, Prefix, Term, check, matches
from cairn.domain.jeffs_query import MAX_OPERANDS, expression, normalise, parse, uses_language


def tokens(text: str) -> list[tuple[str, str, str | None]]:
    return [(t.kind, t.text, t.operator) for t in parse(text).tokens]


@pytest.mark.parametrize(
    ("text", "expected", "operators"),
    [
        ("The Kubernetes Deployment", [("term", "kubernetes", None), ("term", "deployment", None)], False),
        ('"hello world" kube*', [("phrase", "hello world", None), ("prefix", "kube", None)], True),
        (
            "foo AND bar NOT baz",
            [("term", "foo", None), ("term", "bar", "AND"), ("term", "baz", "NOT")],
            True,
        ),
        ("NOT alpha bravo", [("term", "alpha", None), ("term", "bravo", None)], True),  # leading NOT dropped
        ("to do list", [("term", "list", None)], False),
        ("to do", [], False),  # reduces to nothing
    ],
)
def test_the_worked_examples(text: str, expected: list[tuple[str, str, str | None]], operators: bool) -> None:
    parsed = parse(text)
    assert tokens(text) == expected
    assert parsed.has_operators is operators


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("The Kubernetes Deployment", Or((Term("kubernetes"), Term("deployment")))),
        ('"hello world" kube*', Or((Phrase(("hello", "world")), Prefix("kube")))),
        ("foo AND bar NOT baz", And((Term("foo"), Term("bar"), Not(Term("baz"))))),
        ("NOT alpha bravo", Or((Term("alpha"), Term("bravo")))),
        ("foo OR bar AND baz", Or((Term("foo"), And((Term("bar"), Term("baz")))))),  # AND binds tighter
        # every NOT excludes from the whole query, not only from the operand before it
        (
            "deploy docker NOT kubernetes",
            And((Or((Term("deploy"), Term("docker"))), Not(Term("kubernetes")))),
        ),
        ("alpha NOT bravo charlie", And((Or((Term("alpha"), Term("charlie"))), Not(Term("bravo"))))),
        ("alpha AND NOT bravo", And((Term("alpha"), Not(Term("bravo"))))),  # the later operator wins
        ("alpha NOT AND bravo", And((Term("alpha"), Term("bravo")))),
        ("alpha NOT", Term("alpha")),  # an operator with no operand after it is dropped
    ],
)
def test_the_tree_of_a_query(text: str, tree: BoolQuery) -> None:
    found = expression(text).match
    assert found == tree
    assert found is not None
    check(found)  # every tree it makes is one the adapters take


def test_lower_case_operators_are_words_and_operators_must_stand_alone() -> None:
    assert tokens("cats and dogs") == [("term", "cats", None), ("term", "dogs", None)]  # filler dropped
    assert tokens('alpha "x" ANDROID') == [
        ("term", "alpha", None),
        ("phrase", "x", None),
        ("term", "android", None),
    ]
    assert not uses_language("cats and dogs or not birds")
    assert uses_language("cats AND dogs")
    assert uses_language("kube*") and uses_language('say "hi"')
    assert not uses_language("rate it 5 * 3") and not uses_language("* marks a footnote")


def test_stopwords_are_dropped_only_from_bare_word_queries() -> None:
    # bare words: two letters or fewer and English or Dutch stopwords go
    assert tokens("de kat van het huis ox") == [("term", "kat", None), ("term", "huis", None)]
    assert tokens("de kat* op") == [("prefix", "kat", None)]
    # an operator or a quote keeps them in the parse (the spec's AST) ...
    assert tokens("ox AND de") == [("term", "ox", None), ("term", "de", "AND")]
    assert tokens('"de kat" op') == [("phrase", "de kat", None), ("term", "op", None)]
    # ... and only words no index can require are left out of the tree (Cairn's search stopwords)
    assert expression("ox AND the").match == Term("ox")
    assert expression('"the cat" OR "of the"').match == Phrase(("the", "cat"))


def test_normalising_removes_invisible_characters_and_no_break_spaces() -> None:
    assert normalise("  kube\u200b*\u00a0AND\ufeff  \t cluster\n") == "kube* AND cluster"
    assert normalise("cafe\u0301") == "café"
    assert tokens("alpha\u00a0NOT\u00a0bravo") == [("term", "alpha", None), ("term", "bravo", "NOT")]


def test_a_word_the_index_splits_is_its_words_side_by_side_or_joined() -> None:
    tree = expression("e-mail AND INC-20049").match
    assert tree == And(
        (
            Or((Phrase(("e", "mail")), Term("email"))),
            Or((Phrase(("inc", "20049")), Term("inc20049"))),
        )
    )
    assert tree is not None
    assert matches(tree, "send an email about INC-20049")
    assert matches(tree, "the e-mail names inc20049")
    assert not matches(tree, "mail about INC-20049")


def test_a_phrase_needs_its_words_side_by_side_and_a_prefix_any_word_it_starts() -> None:
    tree = expression('"new york" OR kube*').match
    assert tree is not None
    assert matches(tree, "a city: New York")
    assert matches(tree, "kubectl applies it")
    assert not matches(tree, "york is new to me")
    assert not matches(tree, "a cube of ice")


def test_an_unclosed_quote_runs_to_the_end_and_punctuation_alone_is_dropped() -> None:
    assert tokens('alpha "bravo charlie') == [("term", "alpha", None), ("phrase", "bravo charlie", None)]
    assert tokens('"" ?? alpha') == [("term", "alpha", None)]
    # the operator of a dropped operand waits for the next one
    assert tokens("alpha NOT ?? bravo") == [("term", "alpha", None), ("term", "bravo", "NOT")]


def test_what_the_vector_leg_reads_leaves_out_quotes_operators_and_excluded_operands() -> None:
    assert expression('"blue whale" AND krill* NOT "fin whale"').spoken == "blue whale krill"
    assert expression("how do I deploy kube*").spoken == "how do I deploy kube"


def test_a_query_of_nothing_but_exclusions_has_no_match_but_keeps_what_it_excludes() -> None:
    found = expression("the NOT kubernetes")
    assert found.match is None
    assert found.excluded == Term("kubernetes")
    assert expression("NOT").match is None and expression("NOT").excluded is None


def test_at_most_max_operands_are_read() -> None:
    text = " OR ".join(f"w{i}" for i in range(MAX_OPERANDS + 10))
    assert len(parse(text).tokens) == MAX_OPERANDS
