from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest

from cairn.ingest.chunking import chunk
from cairn.ingest.profile_rules import fences, figure_sentences, tables
from cairn.ingest.profiles import (
    CANDIDATES,
    DEFAULT_PROFILE,
    LIBRARY_TYPES,
    PROFILES,
    LibraryProfile,
    ProfiledSpan,
    chunk_for,
    profile_for,
)

WORDS = [
    "the",
    "ledger",
    "river",
    "account",
    "lamp",
    "window",
    "morning",
    "quiet",
    "harbour",
    "paper",
    "stone",
    "letter",
]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng, rng.randint(4, 18)) for _ in range(rng.randint(1, 8)))


def code_block(rng: random.Random) -> str:
    lines = [f"    value_{i} = compute({rng.choice(WORDS)!r}, {i})" for i in range(rng.randint(2, 25))]
    return "```python\ndef run():\n" + "\n".join(lines) + "\n```"


def table(rng: random.Random) -> str:
    rows = [
        f"| {rng.choice(WORDS)} | {rng.randint(1, 999)} | {sentence(rng, 3)} |"
        for _ in range(rng.randint(2, 20))
    ]
    return "| name | size | note |\n|---|---|---|\n" + "\n".join(rows)


def figure(rng: random.Random) -> str:
    amount = f"${rng.randint(1, 99)},{rng.randint(100, 999)},{rng.randint(100, 999)}"
    return (
        f"On Jan. {rng.randint(1, 28)}, 2023 the Co. paid {amount} from acct. no. "
        f"{rng.randint(1000, 9999)}-{rng.randint(10, 99)} at {rng.randint(1, 9)}.{rng.randint(0, 99)}% "
        f"to {rng.choice(WORDS)} {rng.choice(WORDS)} Inc. for the {rng.choice(WORDS)}."
    )


def random_document(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 30)):
        roll = rng.random()
        if roll < 0.1:
            parts.append("#" * rng.randint(1, 3) + " " + sentence(rng, 3)[:-1])
        elif roll < 0.2:
            parts.append(code_block(rng))
        elif roll < 0.3:
            parts.append(table(rng))
        elif roll < 0.45:
            parts.append(" ".join(figure(rng) if rng.random() < 0.5 else sentence(rng, 9) for _ in range(4)))
        elif roll < 0.52:
            parts.append(rng.choice(["***", "* * *", "#", "              The Tower", "CHAPTER IV. The Mill"]))
        elif roll < 0.6:
            parts.append(
                rng.choice(["Tuesday, 14 March 2023", "2023-04-02", "May 5, 2023", "12th June 2024"])
            )
        elif roll < 0.66:
            parts.append(
                rng.choice(["INT. DINER - NIGHT", "EXT. HARBOUR - DAY", "Plate 12. Harbour at Dusk"])
            )
        elif roll < 0.72:
            parts.append("\n".join(sentence(rng, rng.randint(3, 8)) for _ in range(rng.randint(2, 6))))
        else:
            parts.append(paragraph(rng))
    return rng.choice(["", "\n", "  "]) + "\n\n".join(parts) + rng.choice(["", "\n", " \n\n"])


ALL_PROFILES = [DEFAULT_PROFILE, *CANDIDATES.values(), *PROFILES.values()]


def assert_well_formed(text: str, spans: list[ProfiledSpan], profile: LibraryProfile) -> None:
    covered = bytearray(len(text))
    for span in spans:
        assert text[span.start : span.end] == span.text
        assert span.text and not span.text[0].isspace() and not span.text[-1].isspace()
        assert len(span.text) <= max(profile.target_chars, profile.atomic_cap_chars)
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    for i, ch in enumerate(text):
        assert ch.isspace() or covered[i], f"char {i} {ch!r} not covered"
    starts = [span.start for span in spans]
    assert starts == sorted(starts)


def trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    while text[a].isspace():
        a += 1
    while text[b - 1].isspace():
        b -= 1
    return a, b


def assert_never_cut(spans: list[ProfiledSpan], block: tuple[int, int]) -> None:
    a, b = block
    assert any(s.start <= a and b <= s.end for s in spans), "block not inside any span"
    for s in spans:
        assert s.end <= a or s.start >= b or (s.start <= a and b <= s.end), "a span cuts the block"


@pytest.mark.parametrize("seed", range(120))
def test_spans_are_exact_and_cover_the_text(seed: int) -> None:
    rng = random.Random(seed)
    text = random_document(rng)
    for profile in ALL_PROFILES:
        assert_well_formed(text, chunk_for(profile, text), profile)


@pytest.mark.parametrize("seed", range(60))
def test_default_profile_is_plain_chunk(seed: int) -> None:
    text = random_document(random.Random(seed))
    expected = [(s.text, s.start, s.end, s.heading) for s in chunk(text, 700, 120).spans]
    got = chunk_for(DEFAULT_PROFILE, text)
    assert [(s.text, s.start, s.end, s.heading) for s in got] == expected
    assert all(s.context is None for s in got)


@pytest.mark.parametrize("seed", range(60))
def test_technical_never_cuts_code_or_tables(seed: int) -> None:
    rng = random.Random(seed)
    text = random_document(rng)
    profile = CANDIDATES["technical"]
    spans = chunk_for(profile, text)
    blocks = [(a, b) for a, b in fences(text) + tables(text) if b - a <= profile.atomic_cap_chars]
    for a, b in blocks:
        assert_never_cut(spans, trimmed(text, a, b))


def test_default_cuts_a_code_block_that_technical_keeps() -> None:
    prose = "Intro sentence about the service and its many moving parts here. " * 4
    code = "```sh\n" + "\n".join(f"cairn admin rotate-key --brain b{i} --force" for i in range(12)) + "\n```"
    text = f"{prose}\n\n{code}\n\nAfter the block."
    start = text.index("```")
    block = (start, text.index("```\n\nAfter") + 3)
    default = chunk_for(DEFAULT_PROFILE, text)
    assert not any(s.start <= block[0] and block[1] <= s.end for s in default)
    assert_never_cut(chunk_for(CANDIDATES["technical"], text), block)


def test_an_atomic_block_over_the_cap_is_cut() -> None:
    code = "```\n" + "\n".join(f"line {i} of a long generated listing" for i in range(200)) + "\n```"
    spans = chunk_for(CANDIDATES["technical"], code)
    assert len(spans) > 1 and all(len(s.text) <= 700 for s in spans)


@pytest.mark.parametrize("seed", range(60))
def test_finance_never_splits_a_figure_sentence(seed: int) -> None:
    rng = random.Random(seed)
    text = random_document(rng)
    spans = chunk_for(CANDIDATES["finance"], text)
    for a, b in figure_sentences(text):
        if b - a <= CANDIDATES["finance"].atomic_cap_chars:
            assert_never_cut(spans, trimmed(text, a, b))


def test_figure_sentences_survive_abbreviations() -> None:
    text = "Cash fell. On Jan. 5, 2023 the Co. paid $1,250,000 from acct. no. 4471-22 at 6.25%. Then rain."
    found = [text[a:b] for a, b in figure_sentences(text)]
    assert found == ["On Jan. 5, 2023 the Co. paid $1,250,000 from acct. no. 4471-22 at 6.25%."]


def test_finance_keeps_the_figure_the_default_splits() -> None:
    # Lines wrapped mid-sentence: the default chunker ends a unit at every line break.
    filler = "\n".join("Revenue was broadly stable across the region this period." for _ in range(9))
    key = (
        "The revolving credit facility with the\nsyndicate of lenders led by North Bank\n"
        "was drawn on March 3, 2023 for a total\nof $4,200,000 at an interest rate of\n"
        "6.10% per annum, paid from the operating\naccount (acct. no. 8812-44)."
    )
    text = f"{filler}\n{key}\nMore narrative follows about the outlook for the year ahead."
    block = (text.index("The revolving"), text.index("44).") + 4)
    default = chunk_for(DEFAULT_PROFILE, text)
    assert not any(s.start <= block[0] and block[1] <= s.end for s in default)
    assert_never_cut(chunk_for(CANDIDATES["finance"], text), block)


def fiction_text() -> str:
    scene = "She walked along the shore and counted the boats twice. " * 9
    return (
        "CHAPTER I. The Mill\n\n"
        f"{scene}\n\n* * *\n\nThe miller slept.\n\n***\n\n{scene}\n\n"
        "                 The Tower\n\n"
        f"Up in the tower it was cold.\n\n#\n\nLast scene.\n\nCHAPTER II. The Sea\n\n{scene}"
    )


def test_fiction_scene_breaks_are_boundaries() -> None:
    text = fiction_text()
    spans = chunk_for(CANDIDATES["fiction"], text)
    for marker in ("* * *", "***", "                 The Tower", "#\n\nLast", "CHAPTER II"):
        at = text.index(marker)
        line_start = text.rfind("\n", 0, at) + 1
        assert not any(s.start < line_start < s.end for s in spans), marker
    assert_well_formed(text, spans, CANDIDATES["fiction"])


def test_fiction_chunks_carry_their_chapter() -> None:
    text = fiction_text()
    spans = chunk_for(CANDIDATES["fiction"], text)
    second = text.index("CHAPTER II")
    assert {s.context for s in spans if s.start < second} == {"CHAPTER I. The Mill"}
    assert {s.context for s in spans if s.start >= second} == {"CHAPTER II. The Sea"}


def journal_text() -> str:
    body = "Walked to the market, bought apples, talked to the neighbour about the fence. " * 14
    return (
        f"Tuesday, 14 March 2023\n\n{body}\n\n2023-04-02\n\nDentist at nine.\n\nMay 5, 2023 — rain\n\n{body}"
    )


def test_journal_dates_are_boundaries_and_every_chunk_carries_its_date() -> None:
    text = journal_text()
    spans = chunk_for(CANDIDATES["journal"], text)
    for marker in ("2023-04-02", "May 5, 2023"):
        assert not any(s.start < text.index(marker) < s.end for s in spans)
    march = [s for s in spans if s.start < text.index("2023-04-02")]
    assert len(march) > 1
    assert all(s.context == "Tuesday 14 March 2023" and "March 2023" in (s.label or "") for s in march)
    april = [s for s in spans if text.index("2023-04-02") <= s.start < text.index("May 5")]
    assert [s.context for s in april] == ["Sunday 2 April 2023"]
    assert {s.context for s in spans if s.start >= text.index("May 5")} == {"Friday 5 May 2023"}


def test_film_scene_headings_are_boundaries_carried_as_context() -> None:
    action = "Ray wipes the counter and watches the door for a long time. " * 14
    text = f"INT. DINER - NIGHT\n\n{action}\n\nEXT. HARBOUR - DAY\n\nLena waits."
    spans = chunk_for(CANDIDATES["film"], text)
    assert spans[-1].text.startswith("EXT. HARBOUR") and spans[-1].context == "EXT. HARBOUR - DAY"
    assert all(s.context == "INT. DINER - NIGHT" for s in spans[:-1]) and len(spans) > 2


def test_heading_and_context_make_the_label() -> None:
    assert ProfiledSpan("x", 0, 1, "Setup", "14 March").label == "14 March > Setup"
    assert ProfiledSpan("x", 0, 1, "Chapter 1 > Intro", "Chapter 1").label == "Chapter 1 > Intro"
    assert ProfiledSpan("x", 0, 1, None, None).label is None


def test_every_type_has_a_profile_and_unknown_types_get_the_default() -> None:
    assert set(PROFILES) == set(LIBRARY_TYPES) == set(CANDIDATES)
    assert profile_for(None) is DEFAULT_PROFILE and profile_for("poetry") is DEFAULT_PROFILE
    for kind, profile in PROFILES.items():
        assert profile.name == kind


def test_headings_inside_a_segment_keep_their_path() -> None:
    text = "# Guide\n\n## Install\n\n" + "Run the installer and wait for it. " * 30 + "\n\n```\nmake\n```"
    spans = chunk_for(replace(DEFAULT_PROFILE, atomic=("fence",)), text)
    assert {s.heading for s in spans} == {"Guide > Install"}
    assert re.search(r"```\nmake\n```", spans[-1].text)


def test_shipped_profiles_keep_what_was_measured_to_help() -> None:
    code = "```sh\n" + "\n".join(f"cairn admin rotate-key --brain b{i} --force" for i in range(12)) + "\n```"
    text = f"{'Intro sentence about the service and its many moving parts here. ' * 4}\n\n{code}\n\nEnd."
    a = text.index("```")
    assert_never_cut(chunk_for(PROFILES["technical"], text), (a, a + len(code)))
    journal = chunk_for(PROFILES["journal"], journal_text())
    assert all(s.context for s in journal)
    fiction = chunk_for(PROFILES["fiction"], fiction_text())
    assert {s.context for s in fiction} == {"CHAPTER I. The Mill", "CHAPTER II. The Sea"}
    for kind in ("nonfiction", "music"):
        text = random_document(random.Random(kind))
        assert chunk_for(PROFILES[kind], text) == chunk_for(DEFAULT_PROFILE, text)
