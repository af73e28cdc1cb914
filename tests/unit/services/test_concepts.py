"""The concept graph (services/mnemosyne/concepts.py, concept_rules.py): concepts read by the rules (and the
model's entities when one is configured), chunk links kept in step with re-ingests, and the graph
leg's ranking by rarer and longer concepts."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from cairn.domain.models import Chunk
from cairn.services.links.repository import LinkRepository
from cairn.services.memory.entity_llm import GeneratorEntityExtractor
from cairn.services.mnemosyne.concept_rules import ConceptRules
from cairn.services.mnemosyne.concepts import CONCEPT, ConceptGraph
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.clock import FakeClock
from tests.fakes.generator import ScriptedGenerator
from tests.fakes.records import MemoryRecordStore

BRAIN = "brn_1"


def chunk(ordinal: int, text: str) -> Chunk:
    return Chunk(
        id=f"chk_doc1_{ordinal}", brain_id=BRAIN, document_id="doc_doc1", path="a.md", ordinal=ordinal,
        text=text, created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip


def graph(rules: ConceptRules | None = None) -> tuple[ConceptGraph, LinkRepository]:
    links = LinkRepository(MemoryRecordStore())
    return ConceptGraph(links, rules or ConceptRules(), MemoryChunkIndex(8), FakeClock()), links


def concepts_of(links: LinkRepository, chunk_id: str) -> set[str]:
    return {link.target_id for link in links.outgoing(BRAIN, chunk_id, CONCEPT)}


def test_the_rules_read_names_acronyms_and_skip_sentence_openers() -> None:
    text = (
        "Elizabeth Bennet walked to Netherfield Park. Mr. Darcy watched. Then Jane left. "
        "However, the Bank of England cut rates under GDPR. The weather was fine."
    )
    names = {m.name for m in ConceptRules().extract(text)}
    assert names == {"Elizabeth Bennet", "Netherfield Park", "Darcy", "Jane", "Bank of England", "GDPR"}


def test_chunks_link_to_the_concepts_they_name_and_relink_when_they_change() -> None:
    g, links = graph()
    text = "Elizabeth Bennet met Darcy at Netherfield Park.\n\nDarcy wrote to Elizabeth Bennet."
    first = [
        chunk(0, "Elizabeth Bennet met Darcy at Netherfield Park."),
        chunk(1, "Darcy wrote to Elizabeth Bennet."),
    ]
    assert g.index(BRAIN, text, first) == 5
    assert concepts_of(links, first[0].id) == {
        "concept:elizabeth bennet", "concept:darcy", "concept:netherfield park",
    }  # fmt: skip
    again = [
        chunk(0, "Elizabeth Bennet met Darcy at Netherfield Park."),
        chunk(1, "Darcy wrote to Jane Bennet."),
    ]
    assert g.index(BRAIN, text.replace("Elizabeth Bennet.", "Jane Bennet."), again) == 2  # one gone, one new
    assert concepts_of(links, again[1].id) == {"concept:darcy", "concept:jane bennet"}
    assert g.index(BRAIN, text.replace("Elizabeth Bennet.", "Jane Bennet."), again) == 0  # nothing changed


def test_the_graph_leg_prefers_rare_and_long_concepts_and_passes_over_ubiquitous_ones() -> None:
    g, _ = graph()
    chunks = [chunk(i, f"Darcy spoke of dinner number {i}.") for i in range(20)]
    chunks.append(chunk(20, "Darcy rode past Longbourn to Netherfield Park."))
    chunks.append(chunk(21, "Netherfield Park was let at last."))
    chunks.append(chunk(22, "Longbourn was quiet that week."))
    g.index(BRAIN, "\n\n".join(c.text for c in chunks), chunks)
    sizes = {BRAIN: len(chunks)}

    hits = g.search([BRAIN], "Did Darcy ride from Longbourn to Netherfield Park?", limit=5, sizes=sizes)
    assert [h.chunk_id for h in hits] == ["chk_doc1_20", "chk_doc1_21", "chk_doc1_22"]
    assert sorted(hits[0].concepts) == ["longbourn", "netherfield park"]  # darcy: on 21 of 23 chunks
    assert hits[1].score > hits[2].score  # a two-word concept outweighs a one-word one as rare
    assert g.search([BRAIN], "Darcy", limit=5, sizes=sizes) == []


def test_a_configured_model_adds_concepts_the_rules_miss() -> None:
    reply = json.dumps([{"name": "pemberley estate", "type": "system"}])
    model = ScriptedGenerator.answer(reply, model_id="llama-test")
    g, links = graph(ConceptRules(GeneratorEntityExtractor(model)))
    text = "they drove out to the pemberley estate in june."
    g.index(BRAIN, text, [chunk(0, text)])
    assert concepts_of(links, "chk_doc1_0") == {"concept:pemberley estate"}  # lower case: no rule sees it
    assert model.calls and model.calls[0][1][0].text == text


def test_a_fresh_document_links_the_same_without_reading_any_links() -> None:
    text = "Elizabeth Bennet met Darcy at Netherfield Park.\n\nDarcy wrote to Elizabeth Bennet."
    chunks = [
        chunk(0, "Elizabeth Bennet met Darcy at Netherfield Park."),
        chunk(1, "Darcy wrote to Elizabeth Bennet."),
    ]
    read, plain = graph()
    g, links = graph()
    reads: list[str] = []
    outgoing = links.outgoing
    links.outgoing = lambda *a, **k: reads.append(a[1]) or outgoing(*a, **k)  # type: ignore[method-assign]
    assert g.index(BRAIN, text, chunks, fresh=True) == read.index(BRAIN, text, chunks) == 5
    assert reads == []
    assert [concepts_of(links, c.id) for c in chunks] == [concepts_of(plain, c.id) for c in chunks]


def test_the_cheap_tests_agree_with_the_pattern_on_every_text() -> None:
    import random

    from cairn.domain.plain_text import RUN as _TOKEN
    from cairn.domain.plain_text import plain
    from cairn.services.mnemosyne.concept_rules import ConceptMention
    from cairn.services.mnemosyne.concepts import _Matcher, _pattern

    rng = random.Random(7)
    words = ["Cairn", "cairns", "MCP", "mcp_server", "Node.js", "C++", "Jeffs", "Brain", "x2", "café", "the"]
    words += ["Model", "context", "PROTOCOL", "node", "js", "c", "Mr.", "Bank", "of", "England", "Co"]
    words += ["model  Context\tprotocol", "Bank of England", "c js", "Mr. Co"]  # whole forms
    words += [
        "naïve",
        "Ünïcode",
        "—",
        "\u212aelvin",
        "\u0130stanbul",
        "ca\u017fe",
        "MC\u0131",
    ]  # plain or not
    seps = [" ", "  ", ", ", ".", "-", "_", "\n", "(", ")", "/", "'", "\t", " \x1c", "&", "+", ""]
    concepts = [
        ConceptMention("Cairn"),
        ConceptMention("MCP", ("Model Context Protocol",)),
        ConceptMention("Jeffs Brain"),
        ConceptMention("Node.js"),
        ConceptMention("C++"),
        ConceptMention("x2", ("X2",)),
        ConceptMention("café"),
        ConceptMention("mcp_server"),
        ConceptMention("Bank of England", ("BoE", "the  Bank")),
        ConceptMention("Mr. Co", ("c js",)),
        ConceptMention("Jeffs", ("Brain café",)),  # one form not ASCII: the pattern decides
        ConceptMention("Kelvin"),
        ConceptMention("case", ("MCI",)),  # the pattern finds them in "\u212aelvin", "ca\u017fe", "MC\u0131"
    ]
    checked = 0
    for _ in range(4000):
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 12)))
        lowered = text.lower() if plain(text) else None
        tokens = set(_TOKEN.findall(lowered)) if lowered is not None else None
        spaced = " ".join(lowered.split()) if lowered is not None else None
        for concept in concepts:
            expected = _pattern(concept).search(text) is not None
            assert _Matcher(concept).mentioned(text, lowered, tokens) == expected, (concept, text)
            assert _Matcher(concept).mentioned(text, lowered, tokens, spaced) == expected, (concept, text)
            checked += expected
    assert checked > 1500  # the texts do mention them


def test_plain_text_is_all_of_unicode_but_four_characters_that_fold_onto_ascii() -> None:
    import sys

    from cairn.domain.plain_text import plain

    ascii_word = re.compile(r"[a-z0-9_]", re.IGNORECASE)
    folding = []
    for code in range(128, sys.maxunicode + 1):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        lower = char.lower()
        if len(lower) != 1 or lower.isascii() or ascii_word.fullmatch(char):
            folding.append(char)
            continue
        assert (char.isalnum() or char == "_") == (lower.isalnum() or lower == "_"), hex(code)
        assert char.isspace() == lower.isspace(), hex(code)
    assert folding == ["\u0130", "\u0131", "\u017f", "\u212a"]
    assert [plain(f"a{char}b") for char in folding] == [False] * 4
    assert plain("café — naïve") and plain("ascii")


def test_looking_concepts_up_by_a_chunks_words_finds_what_trying_each_finds() -> None:
    import random

    from cairn.domain.plain_text import RUN as _TOKEN
    from cairn.domain.plain_text import plain
    from cairn.services.mnemosyne.concept_rules import ConceptMention
    from cairn.services.mnemosyne.concepts import _Matcher, _Matchers

    rng = random.Random(11)
    words = ["Cairn", "cairns", "MCP", "Model", "Context", "Protocol", "Node.js", "node", "js", "C++", "c"]
    words += ["#tag", "tag", "Jeffs", "Brain", "café", "x2", "a_b", "&", "the", "ÉCOLE", "ecole", "nodejs"]
    words += ["Model Context Protocol", "model  context\tprotocol", "Jeffs Brain"]  # aliases, whole
    words += ["naïve", "\u212a", "ca\u017fe"]
    seps = [" ", "  ", ", ", ".", "-", "_", "\n", "(", ")", "/", "'", "\t"]
    concepts = [
        ConceptMention("Cairn"),
        ConceptMention("MCP", ("Model Context Protocol",)),
        ConceptMention("Jeffs Brain"),
        ConceptMention("Node.js", ("nodejs",)),
        ConceptMention("C++"),
        ConceptMention("#tag"),
        ConceptMention("x2", ("X2",)),
        ConceptMention("café"),  # not ASCII: tried on every chunk
        ConceptMention("&"),  # no word character: tried on every chunk
        ConceptMention("a_b"),
        ConceptMention("École", ("ecole",)),
    ]
    found = 0
    for _ in range(3000):
        named = rng.sample(concepts, rng.randint(1, len(concepts)))
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 14)))
        lowered = text.lower() if plain(text) else None
        tokens = set(_TOKEN.findall(lowered)) if lowered is not None else None
        expected = [c for c in named if _Matcher(c).mentioned(text, lowered, tokens)]
        assert _Matchers(named).mentioned(text) == expected, (named, text)
        found += len(expected)
    assert found > 2000  # the texts do mention them
