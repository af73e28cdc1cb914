"""The concept rules and matcher (services/mnemosyne/concept_rules.py, concepts.py) on text built to
be slow: each costs a pass over its input, with what is found unchanged (the equivalence tests of
test_concepts.py)."""

from __future__ import annotations

import pytest

from cairn.services.mnemosyne.concept_rules import ConceptRules


@pytest.mark.timeout(10)
@pytest.mark.parametrize("word", ["Mr", "Then", "Dr"])
def test_a_run_of_honorifics_or_openers_is_cut_once(word: str) -> None:
    """A run of 100,000 capitalised honorifics (or sentence openers) was cut a word at a time, each
    cut a copy of the rest: 200 KB of `Mr ` took 13 s, 400 KB about a minute."""
    assert [m.name for m in ConceptRules().extract(f"{word} " * 100_000 + "Darcy")] == ["Darcy"]
    assert [m.name for m in ConceptRules().extract(f"Then {word} Darcy of the Park")] == ["Darcy of the Park"]


def test_a_chunk_that_is_not_plain_tries_only_the_patterns_its_words_lead_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chunk holding one of the four characters that fold onto ASCII (a dotless i) tried every
    concept's pattern, 200 a chunk: a 1 MB document of such chunks took 3 s. Now only a concept
    found in the folded text is tried, on the text itself."""
    from cairn.services.mnemosyne import concepts
    from cairn.services.mnemosyne.concept_rules import ConceptMention

    searched: list[str] = []
    pattern = concepts._pattern

    def counted(concept: ConceptMention):  # type: ignore[no-untyped-def]
        searched.append(concept.name)
        return pattern(concept)

    monkeypatch.setattr(concepts, "_pattern", counted)
    named = [ConceptMention(f"Q{i:03d}X") for i in range(200)] + [
        ConceptMention("Kelvin"),
        ConceptMention("café"),
    ]
    matchers = concepts._Matchers(named)
    chunk = "plaın words and \u212aelvin and q007x, " * 50
    assert [c.name for c in matchers.mentioned(chunk)] == ["Q007X", "Kelvin"]
    assert sorted(set(searched)) == ["Kelvin", "Q007X", "café"]


def test_text_that_is_not_plain_finds_what_every_pattern_finds() -> None:
    import random

    from cairn.services.mnemosyne.concept_rules import ConceptMention
    from cairn.services.mnemosyne.concepts import _Matchers, _pattern

    rng = random.Random(5)
    words = [
        "Kiss",
        "\u212aiss",
        "Ki\u017f\u017f",
        "K\u0131ss",
        "\u0130stanbul",
        "istanbul",
        "SKI",
        "sk\u0131",
    ]
    words += ["Sikh", "MCP", "Model", "Context", "Protocol", "\u0131s", "is", "\u017f", "\u212a", "\u0130"]
    words += [
        "Stra\u00dfe",
        "caf\u00e9",
        "\u212aelvin",
        "Node.js",
        "C++",
        "the",
        "of",
        "Bank",
        "England",
        "Ski Club",
    ]
    seps = [" ", "  ", ", ", ".", "-", "_", "\n", "(", ")", "/", "'", "\t", "", "\u0131", "\u212a"]
    pool = [ConceptMention("Kiss"), ConceptMention("Istanbul", ("\u0130stanbul",)), ConceptMention("Sikh")]
    pool += [ConceptMention("SKI", ("Ski Club",)), ConceptMention("MCP", ("Model Context Protocol",))]
    pool += [ConceptMention("Kelvin", ("\u212aelvin",)), ConceptMention("Stra\u00dfe"), ConceptMention("&")]
    pool += [
        ConceptMention("Node.js"),
        ConceptMention("C++"),
        ConceptMention("is"),
        ConceptMention("\u0131s"),
    ]
    pool += [ConceptMention("Bank of England", ("BoE",)), ConceptMention("K"), ConceptMention("s")]
    found = 0
    for _ in range(3000):
        named = rng.sample(pool, rng.randint(1, len(pool)))
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 16)))
        expected = [c for c in named if _pattern(c).search(text) is not None]
        assert _Matchers(named).mentioned(text) == expected, (named, text)
        found += len(expected)
    assert found > 3000  # the texts do mention them


def test_a_document_of_many_links_writes_them_as_it_makes_them() -> None:
    """A 2 MB document whose 1,665 chunks each name the same 200 concepts makes 331,335 links: all
    their ops were made before any was written (529 MB resident). They are written in the same
    transactions, a few thousand ops held at a time."""
    from datetime import UTC, datetime

    from cairn.domain.models import Chunk
    from cairn.services.links.repository import LinkRepository
    from cairn.services.mnemosyne.concepts import CONCEPT, ConceptGraph
    from tests.fakes.chunks import MemoryChunkIndex
    from tests.fakes.clock import FakeClock
    from tests.fakes.records import MemoryRecordStore

    links = LinkRepository(MemoryRecordStore())
    graph = ConceptGraph(links, ConceptRules(), MemoryChunkIndex(8), FakeClock())
    text = " ".join(f"Q{i:03d}X" for i in range(100)) + "."
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    chunks = [
        Chunk(id=f"chk_{n:04d}", brain_id="brn", document_id="doc", path="a.md", ordinal=n, text=text,
              created_at=moment)
        for n in range(300)
    ]  # fmt: skip
    held: list[int] = []
    apply = links.apply
    links.apply = lambda ops, *, per_commit: held.append(len(ops)) or apply(ops, per_commit=per_commit)  # type: ignore[method-assign]

    assert graph.index("brn", text, chunks, fresh=True) == 30_000
    assert max(held) <= 10_100 and sum(held) == 60_000
    assert len(links.incoming("brn", "concept:q042x", CONCEPT)) == 300
