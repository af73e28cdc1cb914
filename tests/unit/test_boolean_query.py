"""Boolean full-text queries: the parser's trees and errors, matching, highlight, matched terms."""

from __future__ import annotations

import pytest

from cairn.domain.boolean_query import (
    And,
    BoolQuery,
    Not,
    Or,
    Phrase,
    Term,
    check,
    highlight,
    matched_terms,
    matches,
    parse,
    positive_terms,
)
from cairn.domain.errors import InvalidInput


def t(word: str) -> Term:
    return Term(word)


def p(*words: str) -> Phrase:
    return Phrase(words)


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("heron", t("heron")),
        ("Héron", t("heron")),  # folded as the full-text legs fold
        ("heron marsh", And((t("heron"), t("marsh")))),
        ("heron AND marsh", And((t("heron"), t("marsh")))),
        ("heron & marsh", And((t("heron"), t("marsh")))),
        ("heron OR marsh", Or((t("heron"), t("marsh")))),
        ("heron | marsh", Or((t("heron"), t("marsh")))),
        ("heron NOT marsh", And((t("heron"), Not(t("marsh"))))),
        ("heron AND NOT marsh", And((t("heron"), Not(t("marsh"))))),
        ("heron !marsh", And((t("heron"), Not(t("marsh"))))),
        ("heron -marsh", And((t("heron"), Not(t("marsh"))))),
        ("heron - marsh", And((t("heron"), t("marsh")))),  # a lone dash is no operator
        ("heron and marsh", And((t("heron"), t("marsh")))),  # lower-case keywords are stopwords
        ("crane OR heron AND marsh", Or((t("crane"), And((t("heron"), t("marsh")))))),
        ("(crane OR heron) AND marsh", And((Or((t("crane"), t("heron"))), t("marsh")))),
        ("crane OR heron NOT marsh", Or((t("crane"), And((t("heron"), Not(t("marsh"))))))),
        ("NOT marsh heron", And((Not(t("marsh")), t("heron")))),
        ("heron NOT NOT marsh", And((t("heron"), t("marsh")))),
        ("heron NOT (NOT crane NOT stork)", And((t("heron"), Or((t("crane"), t("stork")))))),
        ("heron (NOT crane NOT stork)", And((t("heron"), Not(t("crane")), Not(t("stork"))))),
        ("a OR the OR heron", t("heron")),  # stopwords (and the operators they leave) go
        ("heron AND the", t("heron")),
        ("heron * ^", t("heron")),  # so do operands without letters or digits
        ('"new york"', p("new", "york")),
        ('"state of the art"', p("state", "of", "the", "art")),  # a phrase keeps its stopwords
        ('"heron"', t("heron")),
        ('heron "the"', t("heron")),
        ("e-mail", p("e", "mail")),  # a word that splits is a phrase
        ("title:zebra", p("title", "zebra")),
        ("zebra*", t("zebra")),
        ("NEAR(zebra river)", And((t("near"), t("zebra"), t("river")))),
        ('(("new york" | boston)) city', And((Or((p("new", "york"), t("boston"))), t("city")))),
        ("a(b)c heron", And((t("b"), t("c"), t("heron")))),
        ("heron -", t("heron")),
        ("(heron -) OR crane", Or((t("heron"), t("crane")))),  # nor one before a closing parenthesis
    ],
)
def test_valid_queries_parse_to_their_tree(text: str, tree: BoolQuery) -> None:
    assert parse(text) == tree
    check(tree)


def test_a_quote_left_open_runs_to_the_end_of_the_query() -> None:
    assert parse('heron "new york') == parse('heron "new york"')
    assert parse('"new york') == parse('"new york"')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the query is empty"),
        ("   ", "the query is empty"),
        ("(heron", "unbalanced parenthesis at position 1"),
        ("heron AND (marsh OR (crane)", "unbalanced parenthesis at position 11"),
        ("heron)", "unbalanced parenthesis at position 6"),
        ("(heron))", "unbalanced parenthesis at position 8"),
        ("NOT", "NOT needs a term after it at position 1"),
        ("heron NOT", "NOT needs a term after it at position 7"),
        ("heron !", "! needs a term after it at position 7"),
        ("heron AND", "AND needs a term after it at position 7"),
        ("AND heron", "AND needs a term before it at position 1"),
        ("heron AND OR marsh", "AND needs a term after it at position 7"),
        ("heron OR", "OR needs a term after it at position 7"),
        ("OR heron", "OR needs a term before it at position 1"),
        ("heron | | marsh", "| needs a term after it at position 7"),
        ("(AND heron)", "AND needs a term before it at position 2"),
        ("heron ()", "empty group at position 7"),
        ('heron ""', "empty phrase at position 7"),
        ("the AND of", "the query has no words to search for (only stopwords or punctuation)"),
        ("*", "the query has no words to search for (only stopwords or punctuation)"),
        (
            "NOT heron",
            "the query only excludes (NOT): a pure negation cannot be ranked, add a term to match",
        ),
        (
            "-heron -marsh",
            "the query only excludes (NOT): a pure negation cannot be ranked, add a term to match",
        ),
        (
            "heron OR NOT marsh",
            "NOT cannot be an operand of OR at position 10: "
            "NOT only narrows what the other terms of its group match",
        ),
        (
            "heron OR (NOT marsh NOT crane)",
            "NOT cannot be an operand of OR at position 11: "
            "NOT only narrows what the other terms of its group match",
        ),
        ("x" * 501, "the query is longer than 500 characters"),
        (" ".join(f"w{i}" for i in range(51)), "the query has more than 50 terms (at position 191)"),
    ],
)
def test_malformed_queries_name_the_problem_and_where(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse(text)
    assert raised.value.message == message


def test_fifty_terms_and_five_hundred_characters_are_allowed() -> None:
    assert len(positive_terms(parse(" ".join(f"w{i}" for i in range(50))))) == 50
    assert parse("heron " + "x" * 494) == And((t("heron"), t("x" * 494)))


@pytest.mark.parametrize(
    "tree",
    [Not(t("heron")), Or((t("heron"), Not(t("marsh")))), And((Not(t("a1")),)), t("two words"), p()],
)
def test_check_refuses_trees_parse_never_makes(tree: BoolQuery) -> None:
    with pytest.raises(InvalidInput):
        check(tree)


def test_positive_terms_leave_out_negations_and_stopwords_in_query_order() -> None:
    query = parse('marsh "state of the art" NOT (crane OR stork) OR (heron marsh)')
    assert positive_terms(query) == ["marsh", "state", "art", "heron"]


@pytest.mark.parametrize(
    ("query", "fields", "expected"),
    [
        ("heron marsh", ["The heron, in the MARSH."], True),
        ("heron marsh", ["the heron"], False),
        ("heron NOT marsh", ["the heron"], True),
        ("heron NOT marsh", ["the heron", "a marsh"], False),  # NOT looks at every field
        ("heron AND marsh", ["the heron", "a marsh"], True),  # a term may be in any field
        ('"new york"', ["New York!"], True),
        ('"new york"', ["new", "york"], False),  # a phrase sits within one field
        ('"new york"', ["york new"], False),
        ('"new york"', ["new-york"], True),
        ("crane OR (heron NOT marsh)", ["heron marsh"], False),
        ("crane OR (heron NOT marsh)", ["crane heron marsh"], True),
        ("déjà", ["DEJA vu"], True),
        ("heron", ["herons"], False),  # no stemming here
    ],
)
def test_matches_evaluates_the_query_on_fields(query: str, fields: list[str], expected: bool) -> None:
    assert matches(parse(query), *fields) is expected


def test_matched_terms_are_the_positive_terms_present_in_query_order() -> None:
    query = parse('marsh OR "new york" OR heron NOT crane')
    assert matched_terms(query, "A heron flew to York over the marsh; a crane too.") == [
        "marsh",
        "york",
        "heron",
    ]
    assert matched_terms(query, "nothing here") == []


def test_highlight_marks_terms_and_a_phrase_as_a_whole_in_a_short_text() -> None:
    query = parse('"new york" OR heron NOT crane')
    text = "A Heron flew over New  York, then new jersey; a crane stayed."
    assert highlight(query, text) == (
        "A <b>Heron</b> flew over <b>New  York</b>, then new jersey; a crane stayed."
    )


def test_highlight_cuts_a_fragment_of_min_to_max_words_around_the_best_cluster() -> None:
    filler = " ".join(f"w{i}" for i in range(100))
    tail = " ".join(f"z{i}" for i in range(100))
    text = f"heron alone. {filler} the heron waded in the marsh, a heron again. {tail}"
    fragment = highlight(parse("heron OR marsh"), text)
    words = fragment.split()
    assert 25 <= len(words) <= 50
    assert "the <b>heron</b> waded in the <b>marsh</b>, a <b>heron</b> again." in fragment
    assert not fragment.startswith("<b>heron</b> alone")  # the cluster with both terms wins
    assert fragment.count("<b>") == 3


def test_highlight_never_exceeds_max_words_and_keeps_min_words() -> None:
    text = " ".join(["heron"] + [f"w{i}" for i in range(200)] + ["marsh"])
    for max_words, min_words in ((50, 25), (10, 5), (35, 15)):
        fragment = highlight(parse("heron OR marsh"), text, max_words=max_words, min_words=min_words)
        assert min_words <= len(fragment.split()) <= max_words
        assert fragment.startswith("<b>heron</b>")  # the first of equal clusters


def test_highlight_without_a_match_is_the_beginning_and_a_phrase_is_never_cut() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    assert highlight(parse("heron"), text) == " ".join(f"w{i}" for i in range(25))
    text = " ".join([f"w{i}" for i in range(60)] + ["new", "york"] + [f"z{i}" for i in range(60)])
    fragment = highlight(parse('"new york"'), text)
    assert "<b>new york</b>" in fragment and 25 <= len(fragment.split()) <= 50


def test_highlight_refuses_bounds_that_cannot_hold() -> None:
    with pytest.raises(InvalidInput):
        highlight(parse("heron"), "heron", max_words=10, min_words=20)
