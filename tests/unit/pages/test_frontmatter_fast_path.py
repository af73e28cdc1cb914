"""Frontmatter of plain `key: value` lines is read without the YAML parser (domain/pages.py), and
reads exactly as the YAML loader reads it, whatever the lines are."""

from __future__ import annotations

import random

import pytest
import yaml

from cairn.domain import pages
from cairn.domain.pages import parse_frontmatter, parse_page

PIECES = [
    "title", "type", "Alice", "Acme Corp", "x", "_k", "a-b", ":", ": ", ":  ", " ", "  ", "\n", "\n\n",
    "- ", "#", " #", "'", '"', "007", "1e3", "3", "yes", "no", "on", "true", "True", "FALSE", "null",
    "Null", "~", "N/A", "e.g.", "(x)", "a,b", ".", "..", "-", "--", "[a]", "{x: 1}", "é", "\t", "\r",
    "&a ", "*a", "!", "!!str ", "|", ">", "?", "%", "@", "`", ".inf", "-.5", "0x1F", "2024-01-01", "=",
    "<<", "\x85", "\ufeff", "\u2028",
]  # fmt: skip
PLAIN_KEYS = ["title", "type", "k_1", "a-b", "_", "yes"]
PLAIN_WORDS = ["Alice", "Acme Corp", "x", "N/A", "e.g.", "a,b", "yes", "y (z)", " w", "-v", "2"]
ODD_KEYS = ["true", "null", "True", "1", "é", "-a", "a b", "a:b"]
ODD_WORDS = ["True", "null", "NULL", " ", "-", "3", "#", " #", ":", ": ", "é", "'", "\t", "~", "(x)"]


class _NoParser(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        raise AssertionError(f"the YAML parser read {stream!r}")


def test_plain_lines_are_read_without_the_yaml_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "_ScalarLoader", _NoParser)
    text = (
        "---\ntitle: Alice Smith 2\ntype: person\n\nsummary: Runs the lab (Berlin), e.g. anvils.\n---\nBody"
    )

    parsed = parse_page(text)

    assert parsed.frontmatter == {
        "title": "Alice Smith 2",
        "type": "person",
        "summary": "Runs the lab (Berlin), e.g. anvils.",
    }
    assert parsed.compiled_truth == "Body"


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_reads_every_source_as_the_yaml_loader_does(seed: int) -> None:
    rng = random.Random(seed)
    simple = 0
    for _ in range(5000):
        if rng.random() < 0.5:  # mostly-plain lines, so the fast path is taken often

            def pick(plain: list[str], odd: list[str]) -> str:
                return rng.choice(plain if rng.random() < 0.93 else odd)

            lines = [
                pick(PLAIN_KEYS, ODD_KEYS)
                + pick([": ", ":  "], [":", " : ", ":\t"])
                + pick(PLAIN_WORDS[:5], ODD_WORDS)
                + "".join(pick(PLAIN_WORDS, ODD_WORDS) for _ in range(rng.randint(0, 2)))
                for _ in range(rng.randint(1, 4))
            ]
            source = "\n".join(lines) + rng.choice(["", "\n", "\n\n"])
        else:
            source = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        simple += pages._simple_frontmatter(source) is not None
        assert parse_frontmatter(source) == pages._yaml_frontmatter(source), source
    assert simple > 500
