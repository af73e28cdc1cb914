"""breakdown offline: the problem's own clause structure, dependencies from ordering words, a
topological execution order, honest marking, and the input checks."""

from __future__ import annotations

import time

import pytest

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.domain.errors import InvalidInput
from cairn.services.thoughtmcp.reasoning.models import BreakdownResult
from cairn.services.thoughtmcp.reasoning.service import ReasoningService


@pytest.fixture
def service() -> ReasoningService:
    return ReasoningService(ExtractiveGenerator())


def deps(data: dict, kind: str) -> set[tuple[str, str]]:
    return {(d["from"], d["to"]) for d in data["dependencies"] if d["type"] == kind}


def test_then_and_splits_into_ordered_sub_problems(service: ReasoningService) -> None:
    data = service.breakdown("Design the schema, then build the API and write tests")
    BreakdownResult.model_validate(data)
    assert (data["method"], data["model"]) == ("rule-based", None)
    subs = {s["id"]: s for s in data["subProblems"]}
    children = [s for s in data["subProblems"] if s.get("parent") == "problem-1"]
    assert [c["description"] for c in children] == ["Design the schema", "Build the API", "Write tests"]
    schema, api, tests = (c["id"] for c in children)
    assert "parent" not in subs["problem-1"] and subs["problem-1"]["depth"] == 1
    assert deps(data, "sequential") == {(schema, api), (schema, tests)}  # "then" covers both
    assert deps(data, "hierarchical") == {("problem-1", c["id"]) for c in children}
    assert data["executionOrder"] == ["problem-1", schema, api, tests]
    assert data["totalSubProblems"] == 4 and data["maxDepth"] == 3
    assert [c["domain"] for c in children] == ["database", "api", "testing"]
    assert data["memoriesUsed"] == []


def test_after_and_first_put_the_prerequisite_first(service: ReasoningService) -> None:
    data = service.breakdown("Deploy the service after the tests pass. First, back up the database.")
    by_text = {s["description"]: s["id"] for s in data["subProblems"]}
    order = data["executionOrder"]
    assert order.index(by_text["Back up the database"]) < order.index(
        by_text["Deploy the service after the tests pass"]
    )
    assert order.index(by_text["The tests pass"]) < order.index(by_text["Deploy the service"])
    assert (by_text["The tests pass"], by_text["Deploy the service"]) in deps(data, "prerequisite")


def test_execution_order_respects_every_dependency(service: ReasoningService) -> None:
    data = service.breakdown(
        "Migrate the billing system, which requires a data audit, and train the support team by "
        "running workshops. Then retire the old system and finally write the report.",
        max_depth=5,
    )
    position = {node: i for i, node in enumerate(data["executionOrder"])}
    assert sorted(position) == sorted(s["id"] for s in data["subProblems"])
    assert all(position[d["from"]] < position[d["to"]] for d in data["dependencies"])
    assert max(s["depth"] for s in data["subProblems"]) <= 5


def test_max_depth_bounds_the_tree(service: ReasoningService) -> None:
    problem = "Reduce costs and improve reliability without hiring, so that margins grow"
    assert service.breakdown(problem, max_depth=1)["totalSubProblems"] == 1
    two = service.breakdown(problem, max_depth=2)
    three = service.breakdown(problem, max_depth=3)
    assert max(s["depth"] for s in two["subProblems"]) == 2
    assert max(s["depth"] for s in three["subProblems"]) == 3
    assert three["totalSubProblems"] > two["totalSubProblems"]


def test_context_goals_and_constraints_become_sub_problems(service: ReasoningService) -> None:
    data = service.breakdown(
        "Build a scalable web application",
        context={"constraints": ["No new servers"], "goals": ["Serve 10k users"]},
    )
    children = [s for s in data["subProblems"] if s.get("parent") == "problem-1"]
    assert [c["description"] for c in children][-2:] == ["Serve 10k users", "No new servers"]
    assert "goal" in children[-2]["details"] and "constraint" in children[-1]["details"]


def test_same_input_same_output_and_fast(service: ReasoningService) -> None:
    problem = "Design the schema, then build the API and write tests; document the endpoints. " * 20
    started = time.perf_counter()
    first = service.breakdown(problem, max_depth=5)
    assert time.perf_counter() - started < 0.2
    second = service.breakdown(problem, max_depth=5)
    first.pop("processingTime", None), second.pop("processingTime", None)
    assert first == second


@pytest.mark.parametrize("depth", [0, 6, 2.5, True])
def test_max_depth_outside_1_to_5_is_refused(service: ReasoningService, depth: object) -> None:
    with pytest.raises(InvalidInput, match="maxDepth"):
        service.breakdown("Build it", max_depth=depth)  # type: ignore[arg-type]


@pytest.mark.parametrize("problem", ["", "   \n "])
def test_an_empty_problem_is_refused(service: ReasoningService, problem: str) -> None:
    with pytest.raises(InvalidInput, match="problem is required"):
        service.breakdown(problem)


def test_the_seeds_example_gives_its_four_sub_problems_with_dependencies(service: ReasoningService) -> None:
    data = service.breakdown("Build a scalable web application", max_depth=3)
    BreakdownResult.model_validate(data)
    subs = {s["id"]: s for s in data["subProblems"]}
    assert data["totalSubProblems"] == 4
    children = [s for s in data["subProblems"] if s.get("parent") == "problem-1"]
    design, core, infra = (c["id"] for c in children)
    assert subs[design]["description"] == "Design the architecture of the scalable web application"
    assert "core features" in subs[core]["description"] and "infrastructure" in subs[infra]["description"]
    assert deps(data, "sequential") == {(design, core), (design, infra)}  # both wait for the design
    assert data["executionOrder"] == ["problem-1", design, core, infra]
    assert all(d["description"] for d in data["dependencies"])
    edges = {(e["from"], e["to"], e["label"]) for e in data["graph"]["edges"]}
    assert edges == {(d["from"], d["to"], d["type"]) for d in data["dependencies"]}
    assert [n["id"] for n in data["graph"]["nodes"]] == [s["id"] for s in data["subProblems"]]


@pytest.mark.parametrize(
    ("problem", "first_step"),
    [
        (
            "How should we reduce the p95 latency of our checkout API?",
            "Measure the p95 latency of our checkout API",
        ),
        (
            "Should we migrate our monolith to microservices?",
            "Define the criteria for deciding whether to migrate",
        ),
        (
            "Why did customer churn increase by 20% last quarter?",
            'Collect the facts behind the question "Why did',
        ),
        ("Fix the flaky login test", "Reproduce the problem with the flaky login test"),
        (
            "Launch a mobile app for our e-commerce store",
            "Define what the mobile app for our e-commerce store",
        ),
        ("Migrate the billing database to Postgres 16", "Inventory what depends on the billing database"),
    ],
)
def test_a_problem_its_wording_does_not_split_is_broken_into_the_stages_of_its_kind_of_work(
    service: ReasoningService, problem: str, first_step: str
) -> None:
    data = service.breakdown(problem, max_depth=2)
    children = [s for s in data["subProblems"] if s.get("parent") == "problem-1"]
    assert len(children) >= 3 and children[0]["description"].startswith(first_step)
    order = data["executionOrder"]
    assert order[0] == "problem-1" and order[1] == children[0]["id"]  # the first stage comes first
    assert all(s["description"][0].isupper() and "{" not in s["description"] for s in children)
    assert deps(data, "sequential")  # later stages wait for earlier ones


def test_a_problem_that_names_no_kind_of_work_stays_whole(service: ReasoningService) -> None:
    data = service.breakdown("Ideas to make onboarding more fun", max_depth=3)
    assert data["totalSubProblems"] == 1 and data["dependencies"] == [] and data["graph"]["edges"] == []


def test_a_remembered_decision_binds_the_reasoning_as_a_constraint() -> None:
    from cairn.services.thoughtmcp.reasoning import rules

    reading = rules.read(
        "How should we reduce the p95 latency of our checkout API?",
        memories=[
            "Our checkout API runs on Postgres 14 with a single primary.",
            "The team decided in May not to buy new hardware this year.",
        ],
    )
    assert reading.constraints == ("The team decided in May not to buy new hardware this year (remembered)",)
    assert reading.facts == ("14",)  # "Postgres 14 with" is the number alone
    assert "not to buy new hardware" in rules.think(reading, "analytical").conclusion
