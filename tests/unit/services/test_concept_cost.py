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
