"""analyze offline: the framework the problem's features select, a preferred framework honoured,
every step run over the problem's words."""

from __future__ import annotations

import pytest

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.domain.errors import InvalidInput
from cairn.services.thoughtmcp.reasoning.frameworks import FRAMEWORKS, select
from cairn.services.thoughtmcp.reasoning.models import AnalyzeResult
from cairn.services.thoughtmcp.reasoning.service import ReasoningService

SELECTIONS = [
    ("Test the hypothesis that caching cuts latency with an experiment and measure it", "scientific-method"),
    ("Our customers find the checkout experience confusing; redesign it for users", "design-thinking"),
    (
        "Price changes create feedback loops across our interdependent ecosystem of sellers",
        "systems-thinking",
    ),
    ("Evaluate the argument and the evidence behind the vendor's claim", "critical-thinking"),
    ("Brainstorm novel ideas to innovate our onboarding emails", "creative-problem-solving"),
    ("Why did the nightly job crash after the outage?", "root-cause-analysis"),
    ("Find the root cause of the login bug", "root-cause-analysis"),
    ("Rethink pricing from scratch, questioning every assumption", "first-principles"),
    ("Plan for an uncertain future: forecast three scenarios for demand", "scenario-planning"),
    ("How should we approach the product roadmap for next year?", "scenario-planning"),
    ("Why is the system experiencing intermittent failures?", "root-cause-analysis"),
    ("Paint the fence", "first-principles"),  # no cue at all: the default, at low confidence
]


@pytest.mark.parametrize(("problem", "expected"), SELECTIONS)
def test_selection_by_problem_features(problem: str, expected: str) -> None:
    assert select(problem).framework.id == expected


def test_no_cue_selects_first_principles_at_low_confidence() -> None:
    chosen = select("Paint the fence")
    assert chosen.confidence == 0.3 and "No framework" in chosen.reason


def test_two_close_scores_are_a_hybrid() -> None:
    chosen = select("Why did the bug appear? Measure it: test the hypothesis with an experiment")
    assert set(chosen.hybrid) == {"root-cause-analysis", "scientific-method"}


def test_analyze_runs_the_selected_framework_over_the_problem() -> None:
    service = ReasoningService(ExtractiveGenerator())
    data = service.analyze(
        "Why is the checkout service failing intermittently?",
        context={
            "background": "Errors started after the cache upgrade",
            "constraints": ["Cannot take it offline"],
        },
    )
    AnalyzeResult.model_validate(data)
    assert (data["method"], data["model"]) == ("rule-based", None)
    assert data["framework"]["id"] == "root-cause-analysis"
    assert data["selection"]["isHybrid"] is False and "hybridFrameworks" not in data["selection"]
    names = [name for name, _ in next(f for f in FRAMEWORKS if f.id == "root-cause-analysis").steps]
    assert [s.split(": ", 1)[0] for s in data["result"]["steps"]] == names
    text = " ".join(data["result"]["steps"])
    assert "checkout service" in text and "Cannot take it offline" in text
    assert (
        len(data["alternatives"]) == 2 and data["alternatives"][0]["framework"]["id"] != "root-cause-analysis"
    )
    assert 0 < data["result"]["confidence"] <= 1


@pytest.mark.parametrize("framework", [f.id for f in FRAMEWORKS])
def test_every_framework_runs_when_preferred(framework: str) -> None:
    service = ReasoningService(ExtractiveGenerator())
    data = service.analyze("Paint the fence before winter", preferred_framework=framework)
    assert data["framework"]["id"] == framework
    assert data["selection"]["confidence"] == 1.0 and "preferred" in data["selection"]["reason"]
    assert "fence" in " ".join(data["result"]["steps"]).lower()
    assert data["result"]["conclusion"]


def test_an_unknown_preferred_framework_is_refused() -> None:
    with pytest.raises(InvalidInput, match="preferredFramework"):
        ReasoningService(ExtractiveGenerator()).analyze("x", preferred_framework="astrology")


def test_root_cause_analysis_names_the_usual_causes_of_the_problems_domain() -> None:
    service = ReasoningService(ExtractiveGenerator())
    churn = service.analyze("Why did customer churn increase by 20% last quarter?", "root-cause-analysis")
    slow = service.analyze("Why is the checkout API slow since Tuesday?", "root-cause-analysis")
    churn_causes = next(s for s in churn["result"]["steps"] if s.startswith("Identify possible causes"))
    slow_causes = next(s for s in slow["result"]["steps"] if s.startswith("Identify possible causes"))
    assert "price" in churn_causes and "competitor" in churn_causes and "dependency" not in churn_causes
    assert "slow dependency" in slow_causes and "price" not in slow_causes
