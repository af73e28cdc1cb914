"""The graph walk (services/links/graph.py) reads a node's outgoing links a page at a time and stops
in the page that meets its edge cap, on every RecordStore adapter (conftest.RECORD_STORES): a node
of thousands of links, most of them closed or to pages deleted since, is read only as far as the
links the walk keeps. And it gives exactly the walk it gave when it read them all first (`_walked`,
that walk), on generated graphs of live and dead links, with pages of a few links."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Collection
from datetime import UTC, date, datetime
from typing import Any

import pytest

from cairn.domain.models import Brain
from cairn.ports.records import Page, RecordStore
from cairn.services.gbrain.sequences import Sequences
from cairn.services.links import repository
from cairn.services.links.graph import GraphService, LinkDraft, Neighbourhood
from cairn.services.links.repository import LinkRepository, NumberedLink
from tests.fakes.clock import FakeClock

T0 = datetime(2026, 3, 15, 9, 0, tzinfo=UTC)
DAY = date(2026, 3, 15)
VALIDITIES = [(None, None), (None, None), (None, "2020-01-01"), ("2099-01", None), (DAY.isoformat(),) * 2]
GRAPHS = {"memory": 200, "sqlite": 40, "dynamodb": 12}  # generated graphs compared per store


class ReadCounting:
    """Passes through to a store, counting the items its queries return."""

    def __init__(self, inner: RecordStore) -> None:
        self.inner = inner
        self.read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, *args: Any, **kwargs: Any) -> Page:
        page: Page = self.inner.query(*args, **kwargs)
        self.read += len(page.items)
        return page


def _brain(brain_id: str) -> Brain:
    named = {"id": brain_id, "slug": brain_id, "name": brain_id}
    return Brain(**named, embedding_model="m", embedding_dim=3, created_at=T0, updated_at=T0)


def _service(records: RecordStore) -> GraphService:
    return GraphService(LinkRepository(records), Sequences(records), FakeClock(T0))


def _live(asked: list[str]) -> Callable[[list[str]], set[str]]:
    """Pages named `gone_*` were deleted; every id asked about is recorded."""

    def live(ids: list[str]) -> set[str]:
        asked.extend(ids)
        return {i for i in ids if not i.startswith("gone_")}

    return live


def test_a_walk_from_a_node_of_many_dead_links_reads_only_as_far_as_its_cap(records: RecordStore) -> None:
    counting = ReadCounting(records)
    svc, brain = _service(counting), _brain("brn_1")
    drafts = [LinkDraft("hub", f"page_{i:04d}", "cites") for i in range(60)]
    for i in range(1_000):  # then the dead: closed long ago, or to pages deleted since
        closed = "2020-01-01" if i % 2 else None
        target = f"gone_{i:04d}" if closed is None else f"page_{i:04d}"
        drafts.append(LinkDraft("hub", target, "cites", None, closed))
    svc.add_many(brain, drafts)
    asked: list[str] = []
    counting.read = 0
    hood = svc.graph(brain, "hub", edge_cap=50, live=_live(asked))
    assert [e.target_id for e in hood.edges] == [f"page_{i:04d}" for i in range(50)]
    # one page of 50 + 12 + 1 links, the 61st and 63rd to pages gone, the 62nd closed (all 1,060 were
    # read before, and the 560 targets of open links asked about)
    assert counting.read == 63 and len(asked) == 62
    counting.read = 0
    hood = svc.graph(brain, "hub", edge_cap=60, node_cap=1_000, live=_live(asked))
    assert len(hood.edges) == 60 and counting.read == 60 + 15 + 1  # the cap met in the first page
    counting.read = 0
    everything = svc.graph(brain, "hub", edge_cap=1_000, live=_live(asked))
    assert len(everything.edges) == 60 and counting.read == 1_060  # too few live links: all read


def test_a_walk_reads_no_node_past_the_one_that_meets_its_edge_cap(records: RecordStore) -> None:
    counting = ReadCounting(records)
    svc, brain = _service(counting), _brain("brn_1")
    svc.add_many(brain, [LinkDraft("root", f"n{i}", "rel") for i in range(3)])
    svc.add_many(brain, [LinkDraft(f"n{i}", f"m{i}_{j}", "rel") for i in range(3) for j in range(40)])
    counting.read = 0
    hood = svc.graph(brain, "root", depth=2, edge_cap=3)
    assert len(hood.edges) == 3 and counting.read == 3  # n0..n2 are not read: no edge could be added


def _walked(
    links: LinkRepository,
    brain: Brain,
    root: str,
    depth: int,
    day: str | None,
    node_cap: int,
    edge_cap: int,
    live: Callable[[list[str]], Collection[str]] | None,
) -> Neighbourhood:
    """The walk as GraphService.graph made it when it read every outgoing link of a node first."""
    nodes, edges, seen = [root], [], {root}
    frontier: deque[tuple[str, int]] = deque([(root, 0)])
    while frontier:
        node, hops = frontier.popleft()
        if hops >= depth:
            continue
        out = [
            link
            for link in links.outgoing_numbered(brain.id, node)
            if link.target_id != node and (day is None or link.active_on(day))
        ]
        if live is not None and out:
            kept = live([link.target_id for link in out])
            out = [link for link in out if link.target_id in kept]
        for link in out:
            if len(edges) >= edge_cap:
                return Neighbourhood(nodes, edges)
            edges.append(link)
            if link.target_id not in seen:
                if len(nodes) >= node_cap:
                    return Neighbourhood(nodes, edges)
                seen.add(link.target_id)
                nodes.append(link.target_id)
                frontier.append((link.target_id, hops + 1))
    return Neighbourhood(nodes, edges)


def _graph(rng: random.Random, brain_id: str) -> tuple[Brain, list[LinkDraft], list[str]]:
    """A few nodes, some of them hubs, linked at random: to themselves, to pages deleted since,
    closed, not yet started, or open."""
    names = [f"n{i}" for i in range(rng.randint(1, 12))] + [f"gone_{i}" for i in range(rng.randint(0, 4))]
    hubs = rng.sample(names, k=min(len(names), rng.randint(1, 3)))
    drafts = []
    for _ in range(rng.randint(0, 80)):
        source = rng.choice(hubs) if rng.random() < 0.6 else rng.choice(names)
        target = source if rng.random() < 0.05 else rng.choice(names)
        valid_from, valid_until = rng.choice(VALIDITIES)
        drafts.append(LinkDraft(source, target, rng.choice(["a", "b"]), valid_from, valid_until))
    return _brain(brain_id), drafts, names


def test_the_paged_walk_gives_the_walk_that_read_every_link_first(
    records: RecordStore, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(20261206)
    svc = _service(records)
    store = request.node.callspec.params["records"]
    compared = 0
    for g in range(GRAPHS[store]):
        brain, drafts, names = _graph(rng, f"brn_{g}")
        svc.add_many(brain, drafts)
        for _ in range(6):
            # pages of a few links, so a node's links span several
            monkeypatch.setattr(repository, "_NUMBERED_PAGE", rng.randint(1, 7))
            root, depth = rng.choice(names), rng.randint(0, 4)
            temporal = rng.choice(["active", "all"])
            node_cap, edge_cap = rng.randint(1, 15), rng.randint(0, 40)
            live = rng.choice([None, _live([])])
            caps = {"node_cap": node_cap, "edge_cap": edge_cap}
            got = svc.graph(brain, root, depth=depth, temporal=temporal, at=DAY, live=live, **caps)
            day = None if temporal == "all" else DAY.isoformat()
            want = _walked(svc.links, brain, root, depth, day, node_cap, edge_cap, live)
            assert (got.nodes, [e.id for e in got.edges]) == (want.nodes, [e.id for e in want.edges])
            assert all(isinstance(e, NumberedLink) for e in got.edges) and got.edges == want.edges
            compared += 1
    assert compared == 6 * GRAPHS[store]
