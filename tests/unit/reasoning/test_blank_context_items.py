"""ThoughtMCP (TypeScript) drops a context goal or constraint that JavaScript's `trim()` leaves
empty: a byte-order mark alone is such a blank, an information separator (U+001C..U+001F) or NEL
(U+0085) is text. Python's `strip()` reads each the other way round, so each is tried both ways, on
think's rules and on breakdown's sub-problems."""

from __future__ import annotations

import pytest

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.services.thoughtmcp.reasoning.service import ReasoningService

PROBLEM = "Design the schema, then build the API"
TEXTS = [("\ufeff", True), (" \ufeff\u3000", True), ("\x1c", False), ("\x1f", False), ("\x85", False)]
"""(item, whether JavaScript's trim() leaves it empty): Python's strip() says the opposite of each."""


@pytest.fixture
def service() -> ReasoningService:
    return ReasoningService(ExtractiveGenerator())


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_think_counts_a_constraint_or_goal_unless_trim_leaves_it_empty(
    service: ReasoningService, text: str, blank: bool
) -> None:
    constrained = service.think(PROBLEM, "analytical", context={"constraints": [text]})
    assert ("No constraint is stated" in constrained["reasoning"]) == blank
    assert (f"Constraints: {text}" in constrained["reasoning"]) != blank
    aimed = service.think(PROBLEM, "analytical", context={"goals": [text]})
    assert any(line.startswith("No explicit goal") for line in aimed["reasoning"]) == blank
    assert (f"Goals: {text}" in aimed["reasoning"]) != blank


@pytest.mark.parametrize(("text", "blank"), TEXTS)
def test_breakdown_makes_a_sub_problem_of_an_item_unless_trim_leaves_it_empty(
    service: ReasoningService, text: str, blank: bool
) -> None:
    data = service.breakdown(PROBLEM, context={"goals": [text, "Ship it"], "constraints": [f"\t{text} "]})
    children = [s for s in data["subProblems"] if s.get("parent") == "problem-1"]
    added = [c["description"] for c in children if "the context" in c["details"]]
    assert added == (["Ship it"] if blank else [text, "Ship it", text])  # trimmed as trim() does
