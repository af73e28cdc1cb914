"""ThoughtMCP's memories (services/thoughtmcp/) on input built to be slow: each costs about a pass
over its input, with what is made unchanged."""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import pytest

from cairn.domain.boolean_query import highlight, parse
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.checks import auto_keywords
from cairn.services.thoughtmcp.models import Metadata, NewMemory
from tests.fakes.container import fake_container


@pytest.mark.timeout(10)
def test_keywords_of_many_distinct_words_cost_a_pass() -> None:
    """Each distinct word's first place was looked up in the list of all words: 100,000 characters
    (a memory's most) of distinct words took 1.5 s, and 400,000 (this test) about 25 s."""
    letters = (string.ascii_lowercase[:20],) * 4
    words = ["".join(w) for w in itertools.islice(itertools.product(*letters), 80_000)]
    assert auto_keywords(" ".join(words)) == words[:8]


def test_keywords_are_the_most_frequent_words_the_first_met_first_among_equals() -> None:
    text = "Zebra apple kettle. The kettle's zebra; apple Mango mango mango, zebra kettle and the end"
    assert auto_keywords(text) == ["zebra", "mango", "apple", "kettle", "kettle's", "end"]


def test_forgetting_a_memory_of_many_links_commits_them_a_batch_at_a_time(tmp_path: Path) -> None:
    """A memory every later one linked to: each of its links was its own transaction (4,000 of
    them 1.55 s to forget on the embedded store, 15.89 s beside other disk work). The links go
    UNLINKS_PER_COMMIT a transaction, and the other ends' statistics with them."""
    container = fake_container(tmp_path)
    thoughts = container.thoughts
    brain = thought_brain(container.brains, None, create=True)
    text = "The kettle descales on Fridays, always."
    same = Metadata(keywords=("kettle",), tags=("t",), category="c")
    others = [
        thoughts.remember(brain, NewMemory(f"Memory {n} of something else", "u", "s", "semantic"))["memoryId"]
        for n in range(60)
    ]
    hub = thoughts.remember(
        brain, NewMemory(text, "u", "s", "semantic", Metadata(("kettle",), ("t",), "c", importance=1.0))
    )["memoryId"]
    for memory_id in others:  # each links again among the newest memories: to the hub
        thoughts.update(brain, memory_id, "u", content=f"{text} ", metadata=same)
    assert len(thoughts.links.outgoing(brain.id, hub)) == 60
    commits: list[int] = []
    commit = thoughts.rows.commit
    thoughts.rows.commit = lambda ops: commits.append(len(ops)) or commit(ops)  # type: ignore[method-assign]

    thoughts.forget(brain, hub, "u")

    assert len(commits) == 4 and max(commits) <= 100  # 19 links a transaction (waypoints.UNLINKS_PER_COMMIT)
    rows = thoughts.rows.get(brain.id, "u", others)
    assert {(r.link_count, r.link_sum) for r in rows.values()} == {(0, 0.0)}
    assert all(thoughts.links.outgoing(brain.id, m) == [] for m in [hub, *others])


@pytest.mark.timeout(10)
def test_a_search_hit_of_one_matching_word_is_highlighted_in_a_pass() -> None:
    """The ThoughtMCP search tool highlights each hit: choosing the fragment read every later mark
    for each mark, so a memory of 100,000 characters of one matching word took 28 s (a page shows
    up to 100 memories)."""
    shown = highlight(parse("x"), "x " * 50_000)
    assert shown == " ".join(["<b>x</b>"] * 50)
