from __future__ import annotations

import itertools
import random
import re

import pytest

from cairn.ingest.chunking import _UNIT_BREAK, TextSpan, chunk, chunk_text

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + rng.choice([".", "!", "?"])


def random_markdown(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 25)):
        roll = rng.random()
        if roll < 0.2:
            parts.append("#" * rng.randint(1, 4) + " " + sentence(rng, rng.randint(1, 4))[:-1])
        elif roll < 0.3:
            parts.append(
                "\n".join("- " + sentence(rng, rng.randint(2, 12)) for _ in range(rng.randint(1, 6)))
            )
        elif roll < 0.35:
            parts.append("x" * rng.randint(1, 3000))  # an unbreakable token
        elif roll < 0.4:
            parts.append("```\n# not a heading\n" + sentence(rng, 30) + "\n```")
        else:
            parts.append(" ".join(sentence(rng, rng.randint(1, 60)) for _ in range(rng.randint(1, 12))))
    separators = ["\n\n", "\n", "\n\n\n", " \n \t\n"]
    return rng.choice(["", "  \n"]) + "".join(p + rng.choice(separators) for p in parts)


def assert_well_formed(text: str, spans: list[TextSpan], target: int) -> None:
    covered = bytearray(len(text))
    for span in spans:
        assert span.text, "empty chunk"
        assert span.text == text[span.start : span.end]
        assert span.text == span.text.strip()
        assert len(span.text) <= target or len(spans) == 1
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"uncovered characters at {missing[:10]}"
    starts = [span.start for span in spans]
    assert starts == sorted(starts)


class TestShortText:
    def test_short_text_is_one_span_equal_to_the_stripped_text(self) -> None:
        text = "\n\n  # Notes\n\nA short memory.  \n"
        assert chunk_text(text) == [TextSpan("# Notes\n\nA short memory.", 4, 28, "Notes")]

    def test_whitespace_only_gives_no_chunks(self) -> None:
        assert chunk_text(" \n\t ") == []
        assert chunk_text("") == []

    def test_rejects_overlap_not_smaller_than_target(self) -> None:
        with pytest.raises(ValueError):
            chunk_text("x", target_chars=100, overlap_chars=100)


class TestProperties:
    @pytest.mark.parametrize("seed", range(60))
    def test_random_texts_are_fully_covered_by_valid_chunks(self, seed: int) -> None:
        rng = random.Random(seed)
        text = random_markdown(rng)
        target = rng.choice([80, 300, 1200])
        overlap = rng.choice([0, target // 6, target // 3])
        spans = chunk_text(text, target_chars=target, overlap_chars=overlap)
        assert_well_formed(text, spans, target)

    def test_long_unbroken_token_is_cut_hard(self) -> None:
        text = "y" * 2500
        spans = chunk_text(text, target_chars=1000, overlap_chars=100)
        assert_well_formed(text, spans, 1000)
        assert len(spans) >= 3


class TestPackingAndOverlap:
    def test_paragraphs_pack_up_to_the_target(self) -> None:
        paragraphs = [f"Paragraph {i} has a few words in it." for i in range(40)]
        text = "\n\n".join(paragraphs)
        spans = chunk_text(text, target_chars=300, overlap_chars=0)
        assert all(250 <= len(s.text) <= 300 for s in spans[:-1])
        assert all(s.text.startswith("Paragraph") and s.text.endswith(".") for s in spans)

    def test_consecutive_chunks_overlap_by_whole_sentences(self) -> None:
        sentences = [f"Sentence number {i:03d} is here." for i in range(60)]  # 29 chars each
        text = " ".join(sentences)
        spans = chunk_text(text, target_chars=300, overlap_chars=70)
        assert len(spans) > 3
        for before, after in itertools.pairwise(spans):
            shared = before.end - after.start
            assert 29 <= shared <= 70
            assert after.text.startswith("Sentence number")

    def test_long_sentence_splits_at_whitespace(self) -> None:
        text = " ".join(f"word{i}" for i in range(400))
        spans = chunk_text(text, target_chars=200, overlap_chars=40)
        assert_well_formed(text, spans, 200)
        for span in spans:
            assert span.text.split()[0].startswith("word") and span.text.split()[-1].startswith("word")
            assert all(w.startswith("word") and w[4:].isdigit() for w in span.text.split())

    def test_no_overlap_when_zero(self) -> None:
        text = " ".join(f"Sentence {i} ends." for i in range(100))
        spans = chunk_text(text, target_chars=200, overlap_chars=0)
        assert all(a.end < b.start for a, b in itertools.pairwise(spans))


class TestHeadings:
    TEXT = (
        "Preamble before any heading. " * 5
        + "\n\n# Setup\n\n## Install\n\n"
        + "Run the installer. " * 10
        + "\n\n```sh\n# not a heading\n```\n\n## Configure\n\n"
        + "Edit the file. " * 10
        + "\n\n# Usage\n\n"
        + "Call the tool. " * 10
    )

    def test_chunks_carry_their_heading_path(self) -> None:
        spans = chunk_text(self.TEXT, target_chars=250, overlap_chars=40)
        assert_well_formed(self.TEXT, spans, 250)
        by_heading = {s.heading for s in spans}
        assert by_heading == {None, "Setup > Install", "Setup > Configure", "Usage"}
        install = [s for s in spans if s.heading == "Setup > Install"]
        # The body-less "# Setup" joins the section below it instead of becoming its own chunk.
        assert install[0].text.startswith("# Setup\n\n## Install")
        assert all("# not a heading" not in (s.heading or "") for s in spans)

    def test_chunks_never_span_two_sections(self) -> None:
        spans = chunk_text(self.TEXT, target_chars=250, overlap_chars=40)
        for span in spans:
            inner_headings = [ln for ln in span.text.splitlines()[1:] if ln.startswith("# Usage")]
            assert not inner_headings

    def test_overlap_stays_within_a_section(self) -> None:
        spans = chunk_text(self.TEXT, target_chars=250, overlap_chars=40)
        for before, after in itertools.pairwise(spans):
            if before.heading != after.heading:
                assert after.start > before.end


def appendix(rng: random.Random) -> str:
    """Text an append may add: a line, a heading, a word carried on, a fence, a long token..."""
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(["\n", "\n\n", " ", "", "\n- "]) + sentence(rng, rng.randint(1, 30))
    if roll < 0.45:
        hashes = "#" * rng.randint(1, 7)
        body = rng.choice(["", "\n\nBody of the new section."])
        return rng.choice(["\n", "", " "]) + hashes + rng.choice([" ", ""]) + sentence(rng, 3) + body
    if roll < 0.55:
        return "y" * rng.randint(1, 400)
    if roll < 0.65:
        return rng.choice(["", "\n"]) + "```\n# in a fence\n" + sentence(rng, 10)
    if roll < 0.75:
        return rng.choice(['"', ")", ".", "!", "…"]) + rng.choice([" ", "\n", ""]) + sentence(rng, 5)
    return random_markdown(rng)


class TestAppending:
    """Chunking runs forward: an append changes only the last chunks, and `chunk` extends the
    previous chunking to exactly what cutting the whole text gives."""

    @pytest.mark.parametrize("seed", range(300))
    def test_extending_the_previous_chunking_equals_chunking_the_whole_text(self, seed: int) -> None:
        rng = random.Random(seed)
        text = random_markdown(rng)
        target = rng.choice([40, 80, 300, 1200])
        overlap = rng.choice([0, target // 6, target // 3])
        previous = chunk(text, target, overlap)
        for _ in range(4):
            text += appendix(rng)
            extended = chunk(text, target, overlap, previous)
            assert list(extended.spans) == chunk_text(text, target, overlap)
            assert extended.spans[: extended.reused] == previous.spans[: extended.reused]
            previous = extended

    @pytest.mark.parametrize("seed", range(300))
    def test_an_append_changes_at_most_the_last_two_chunks(self, seed: int) -> None:
        # Given a text whose last section has a body (a trailing body-less heading would be
        # renamed by an appended heading, with every chunk it spans)
        rng = random.Random(seed)
        text = random_markdown(rng) + "\n\n" + sentence(rng, rng.randint(1, 40))
        target = rng.choice([40, 80, 300, 1200])
        overlap = rng.choice([0, target // 6, target // 3])
        before = chunk_text(text, target, overlap)
        # When anything is appended / Then all chunks but the last two are unchanged
        after = chunk_text(text + appendix(rng), target, overlap)
        assert after[: max(len(before) - 2, 0)] == before[:-2]
        # When what is appended starts with whitespace / Then all but the last one are
        spaced = rng.choice(["\n", " ", "\n\n", "\t"]) + appendix(rng)
        after = chunk_text(text + spaced, target, overlap)
        assert after[: max(len(before) - 1, 0)] == before[:-1]

    def test_carrying_on_the_last_word_can_change_the_chunk_before_the_last(self) -> None:
        # Given: the last unit does not fit beside the first chunk's sentence
        text = "One two three four. seven eight nine tenelevenx"
        before = chunk_text(text, target_chars=40, overlap_chars=0)
        assert [s.text for s in before] == ["One two three four.", "seven eight nine tenelevenx"]
        # When the append carries on its last word past the target, the unit is cut at its last
        # space, and its first piece now fits beside the sentence: the first chunk changes,
        # though it ended 28 characters before the old end
        after = chunk_text(text + "y" * 30, target_chars=40, overlap_chars=0)
        assert [s.text for s in after] == [
            "One two three four. seven eight nine",
            "teneleven" + "x" + "y" * 30,
        ]
        # When the append starts with whitespace instead, only the last chunk can change
        spaced = chunk_text(text + " " + "y" * 30, target_chars=40, overlap_chars=0)
        assert spaced[:2] == before

    def test_an_append_reuses_every_chunk_it_cannot_change(self) -> None:
        rng = random.Random(7)
        text = "# Notes\n\n" + "\n\n".join(sentence(rng, 30) for _ in range(200))
        previous = chunk(text, 300, 50)
        extended = chunk(text + "\n- one more line", 300, 50, previous)
        assert extended.reused == len(previous.spans) - 2
        assert all(a is b for a, b in zip(extended.spans, previous.spans[: extended.reused], strict=False))

    def test_a_text_that_does_not_extend_the_previous_one_is_cut_afresh(self) -> None:
        rng = random.Random(8)
        text = "\n\n".join(sentence(rng, 30) for _ in range(50))
        previous = chunk(text, 300, 50)
        edited = "Changed start. " + text
        again = chunk(edited, 300, 50, previous)
        assert again.reused == 0
        assert list(again.spans) == chunk_text(edited, 300, 50)
        assert chunk(text, 200, 50, previous).reused == 0  # other sizes: nothing to reuse


# The unit-break pattern as first written: one alternative per break kind, lookbehinds first.
# chunking.py's pattern is a faster form of it and must find exactly the same breaks.
PLAIN_UNIT_BREAK = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’)\]]))\s+|(?<!\s)\s*\n\s*")


@pytest.mark.parametrize("seed", range(40))
def test_unit_breaks_are_those_of_the_plain_pattern(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = ["a", "b", " ", "\n", "\t", "\r", ".", "!", "…", '"', ")", "]", "’", "\u2028", "\x0b"]
    for _ in range(250):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        plain = [m.span() for m in PLAIN_UNIT_BREAK.finditer(text, start, end)]
        assert [m.span() for m in _UNIT_BREAK.finditer(text, start, end)] == plain
