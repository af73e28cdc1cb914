"""A long problem costs in proportion to its length: the dependencies of a decomposition, the
breakdown's reply and the synthetic stream's insights stay linear in the number of sentences,
while a short problem keeps every dependency its ordering words give."""

from __future__ import annotations

import json
from itertools import pairwise

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.services.thoughtmcp.reasoning import rules
from cairn.services.thoughtmcp.reasoning.decompose import Edge, decompose
from cairn.services.thoughtmcp.reasoning.service import MAX_RULE_CHARS, ReasoningService

ACTIONS = ("check logs", "restart it", "ping the host", "read docs", "fix bug")


def firsts(n: int) -> str:
    """n sentences of 17 characters on average, each starting with "First"."""
    return " ".join(f"First {ACTIONS[i % 5]}." for i in range(n))


def linked(edges: list[Edge], kind: str) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in edges if e.type == kind}


def test_sentences_that_all_start_with_first_chain_in_reading_order() -> None:
    n = 400
    tree = decompose(firsts(n), max_depth=2)
    pieces = [node.id for node in tree.nodes[1:]]
    assert len(pieces) == n
    assert len(tree.edges) <= 3 * n  # each "first" before every sibling was n² / 2
    assert tree.order == ["problem-1", *pieces]
    assert set(pairwise(pieces)) <= linked(tree.edges, "prerequisite")


def test_a_few_first_sentences_each_come_before_every_sibling() -> None:
    tree = decompose("First back up the database. First notify the users. Deploy the service.", max_depth=2)
    backup, notify, deploy = (node.id for node in tree.nodes[1:])
    assert linked(tree.edges, "prerequisite") == {(backup, notify), (backup, deploy), (notify, deploy)}


def test_a_large_stage_after_a_large_stage_waits_for_it_through_its_first_piece() -> None:
    half = 200
    problem = " ".join(("Then check" if i == half else "Check") + f" item {i}." for i in range(2 * half))
    tree = decompose(problem, max_depth=2)
    pieces = [node.id for node in tree.nodes[1:]]
    before, after = pieces[:half], pieces[half:]
    assert len(tree.edges) <= 3 * len(pieces)  # each piece after each piece before was half²
    assert linked(tree.edges, "sequential") == {(b, after[0]) for b in before} | {
        (after[0], a) for a in after[1:]
    }
    assert tree.order == ["problem-1", *pieces]


def test_small_stages_keep_every_pair() -> None:
    problem = " ".join(f"Check item {i}." for i in range(5)) + " Then ship it. Tell the team."
    tree = decompose(problem, max_depth=2)
    pieces = [node.id for node in tree.nodes[1:]]
    *before, ship, tell = pieces
    assert linked(tree.edges, "sequential") == {(b, a) for b in before for a in (ship, tell)}


def test_the_breakdown_of_a_thousand_first_sentences_is_linear_in_size() -> None:
    problem = firsts(1000)
    assert len(problem) <= MAX_RULE_CHARS
    data = ReasoningService(ExtractiveGenerator()).breakdown(problem)
    assert data["totalSubProblems"] == 1001
    assert len(data["dependencies"]) <= 3 * 1000
    assert len(json.dumps(data)) < 3_000_000  # every dependency listed was 1,000² / 2 of them, 190 MB
    position = {node: i for i, node in enumerate(data["executionOrder"])}
    assert all(position[d["from"]] < position[d["to"]] for d in data["dependencies"])
    assert max(len(s["details"]) for s in data["subProblems"][1:]) < 200  # "comes after" one name


def test_a_goal_served_by_many_steps_names_the_first_of_them() -> None:
    problem = " ".join(f"We need to fix log {i}." for i in range(300))
    output = rules.think(rules.read(problem), "synthetic")
    served = [i for i in output.insights if "is served by step" in i]
    assert len(served) == 300  # each sentence is a goal, and every step shares "fix" and "log" with it
    assert all(i.endswith(" and later ones") for i in served)
    assert max(len(i.split(" is served by step ")[1].split(", ")) for i in served) <= 30
    assert sum(map(len, output.insights)) < 300 * 200  # each goal listing all 300 steps: 300 × 1,500
