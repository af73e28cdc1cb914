from __future__ import annotations

import itertools
import random

import pytest

from cairn.ingest.chunking import TextSpan, chunk_text

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
