"""The document graph (services/links/graph.py on services/links/repository.py's numbered links) on every
RecordStore adapter (see conftest.RECORD_STORES): integer ids, close-instead-of-create, closing by
id, the valid_until >= valid_from rule, backlinks active or all, and breadth-first neighbourhoods
with depth and caps, each read one partition query per node."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from typing import Any

import pytest

from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Brain, Link
from cairn.ports.records import RecordStore
from cairn.services.gbrain.sequences import Sequences
from cairn.services.links.graph import GraphService, LinkDraft
from cairn.services.links.repository import LinkRepository, NumberedLink
from tests.fakes.clock import FakeClock

T0 = datetime(2026, 3, 15, 9, 0, tzinfo=UTC)
DAY = date(2026, 3, 15)


def _brain(brain_id: str = "brn_1") -> Brain:
    return Brain(
        id=brain_id,
        slug=brain_id,
        name=brain_id,
        embedding_model="m",
        embedding_dim=3,
        created_at=T0,
        updated_at=T0,
    )


def _service(records: RecordStore) -> GraphService:
    return GraphService(LinkRepository(records), Sequences(records), FakeClock(T0))


def _ids(links: Sequence[NumberedLink]) -> list[int]:
    return [ln.id for ln in links]


def _edges(links: Sequence[NumberedLink]) -> list[tuple[str, str]]:
    return [(ln.source_id, ln.target_id) for ln in links]


class CountingRecords:
    """Passes through to a store, recording every call (method and partition key)."""

    def __init__(self, inner: RecordStore) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []

    def _call(self, name: str, key: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((name, key))
        return getattr(self.inner, name)(*args, **kwargs)

    def get(self, pk: str, sk: str) -> Any:
        return self._call("get", pk, pk, sk)

    def get_many(self, keys: Any) -> Any:
        return self._call("get_many", "", keys)

    def put(self, item: Any, expected_version: Any = None) -> Any:
        return self._call("put", item.pk, item, expected_version)

    def delete(self, pk: str, sk: str, expected_version: Any = None) -> Any:
        return self._call("delete", pk, pk, sk, expected_version)

    def query(self, pk: str, prefix: str = "", **kwargs: Any) -> Any:
        return self._call("query", pk, pk, prefix, **kwargs)

    def transact(self, ops: Any) -> Any:
        return self._call("transact", "", ops)


def _in_threads(n: int, work: Callable[[int], object]) -> list[object]:
    start = threading.Barrier(n)

    def run(i: int) -> object:
        start.wait()
        return work(i)

    with ThreadPoolExecutor(n) as pool:
        return [future.result() for future in [pool.submit(run, i) for i in range(n)]]


# -- ids and writes ------------------------------------------------------------------------------


def test_links_get_consecutive_ids_per_brain_and_keep_their_values(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    first = svc.link(brain, "doc_a", "doc_b", "works_at", valid_from="2024-01")
    second = svc.link(brain, "doc_a", "doc_c", "advises", "2024-01-02", "2025-06-30T12:00:00Z")
    assert (first.id, second.id) == (1, 2)
    assert svc.link(_brain("brn_2"), "doc_a", "doc_b", "works_at").id == 1  # ids are per brain
    assert svc.get(brain, 1) == first
    assert (first.source_id, first.target_id, first.kind, first.valid_from, first.valid_until) == (
        "doc_a",
        "doc_b",
        "works_at",
        "2024-01",
        None,
    )
    assert svc.get(brain, 2).valid_until == "2025-06-30T12:00:00Z"  # kept as given
    with pytest.raises(NotFound, match="link not found: id 3"):
        svc.get(brain, 3)


def test_valid_until_closes_the_open_link_instead_of_creating_one(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    opened = svc.link(brain, "alice", "acme", "works_at", valid_from="2024-01")
    svc.link(brain, "alice", "acme", "advises")  # another relationship stays open
    closed = svc.link(brain, "alice", "acme", "works_at", valid_until="2025-06")
    assert closed.id == opened.id
    assert (closed.valid_from, closed.valid_until) == ("2024-01", "2025-06")  # valid_from kept
    assert [(ln.id, ln.valid_until) for ln in svc.backlinks(brain, "acme", temporal="all")] == [
        (2, None),
        (1, "2025-06"),
    ]
    # nothing open any more: a new (closed) link
    again = svc.link(brain, "alice", "acme", "works_at", "2025-07", "2025-08")
    assert again.id == 3 and again.valid_until == "2025-08"
    # a new open link next to the closed ones, then closed the same way
    assert svc.link(brain, "alice", "acme", "works_at", valid_from="2026-01").id == 4
    assert svc.link(brain, "alice", "acme", "works_at", valid_until="2026-02").id == 4
    assert [(ln.id, ln.valid_until) for ln in svc.backlinks(brain, "acme", temporal="all")] == [
        (4, "2026-02"),
        (3, "2025-08"),
        (2, None),
        (1, "2025-06"),
    ]


def test_every_open_link_of_the_triple_is_closed(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.link(brain, "a", "b", "rel")
    svc.link(brain, "a", "b", "rel")
    svc.link(brain, "a", "c", "rel")
    assert svc.link(brain, "a", "b", "rel", valid_until="2026-01-01").id == 2  # the newest
    assert [(ln.target_id, ln.valid_until) for ln in svc.graph(brain, "a", temporal="all").edges] == [
        ("b", "2026-01-01"),
        ("b", "2026-01-01"),
        ("c", None),
    ]


def test_close_by_id_sets_valid_until(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    link = svc.link(brain, "bob", "beta", "advises")
    closed = svc.close(brain, link.id, "2025-12")
    assert (closed.id, closed.valid_until) == (link.id, "2025-12")
    assert svc.get(brain, link.id) == closed
    assert svc.backlinks(brain, "beta", at=DAY) == []
    assert svc.backlinks(brain, "beta", temporal="all") == [closed]
    assert svc.graph(brain, "bob", temporal="all").edges == [closed]
    assert svc.close(brain, link.id, "2026-12-31").valid_until == "2026-12-31"  # an end moves
    assert svc.backlinks(brain, "beta", at=DAY) == [svc.get(brain, link.id)]
    for unknown in [0, 2, 10**25]:
        with pytest.raises(NotFound, match=f"link not found: id {unknown}"):
            svc.close(brain, unknown, "2026-01")
    with pytest.raises(NotFound):
        svc.close(_brain("brn_2"), link.id, "2026-01")  # another brain's id


@pytest.mark.parametrize(
    ("valid_from", "valid_until", "allowed"),
    [
        ("2026-03-15", "2026-03-14", False),
        ("2026-03-15", "2026-03-15", True),
        ("2026-03-15", "2026-03", False),  # a month starts on its first day
        ("2026-03", "2026-03-01", True),
        ("2026-03-01", "2026-03", True),  # the same instant, though not the same string
        ("2026-03-15T00:00:00Z", "2026-03-15", True),
        ("2026-03-15T10:00:00Z", "2026-03-15", False),  # a day starts at midnight
        ("2026-03-15T10:00:00Z", "2026-03-15T10:00:00Z", True),
        ("2026-03-15", "2026-03-15T00:00:01Z", True),
        ("2025-12-31T23:59:59Z", "2026-01", True),
    ],
)
def test_valid_until_may_not_be_before_valid_from(
    records: RecordStore, valid_from: str, valid_until: str, allowed: bool
) -> None:
    svc, brain = _service(records), _brain()
    link = svc.link(brain, "a", "b", "rel", valid_from=valid_from)
    if allowed:
        assert svc.close(brain, link.id, valid_until).valid_until == valid_until
        assert svc.link(brain, "a", "c", "rel", valid_from, valid_until).valid_until == valid_until
        return
    with pytest.raises(InvalidInput):
        svc.close(brain, link.id, valid_until)
    with pytest.raises(InvalidInput):
        svc.link(brain, "a", "b", "rel", valid_until=valid_until)  # closing the open one
    with pytest.raises(InvalidInput):
        svc.link(brain, "a", "c", "rel", valid_from, valid_until)  # creating
    assert svc.get(brain, link.id).valid_until is None  # nothing changed
    assert [ln.id for ln in svc.graph(brain, "a", temporal="all").edges] == [link.id]


@pytest.mark.parametrize("bad", ["2026", "2026-3-01", "2026-03-15 10:00:00", "2026-03-15T10:00:00+01:00", ""])
def test_validity_values_outside_the_three_forms_are_refused(records: RecordStore, bad: str) -> None:
    svc, brain = _service(records), _brain()
    with pytest.raises(InvalidInput):
        svc.link(brain, "a", "b", "rel", valid_from=bad)
    link = svc.link(brain, "a", "b", "rel")
    with pytest.raises(InvalidInput):
        svc.close(brain, link.id, bad)


def test_bad_relationships_and_ids_are_refused(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    for rel in ["", "has space", "x" * 65]:
        with pytest.raises(InvalidInput):
            svc.link(brain, "a", "b", rel)
    with pytest.raises(InvalidInput):
        svc.link(brain, "", "b", "rel")
    assert svc.backlinks(brain, "b", temporal="all") == []


def test_add_many_creates_every_draft_with_consecutive_ids(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.link(brain, "x", "y", "rel")
    drafts = [LinkDraft("hub", f"doc_{i:02d}", "cites") for i in range(70)]  # several transactions
    drafts.append(LinkDraft("x", "y", "rel", valid_until="2025-01"))  # created, not closing link 1
    made = svc.add_many(brain, drafts)
    assert _ids(made) == list(range(2, 73))
    assert len(svc.graph(brain, "hub", temporal="all").edges) == 70
    assert svc.get(brain, 1).valid_until is None
    assert svc.link(brain, "x", "y", "rel").id == 73
    with pytest.raises(InvalidInput):
        svc.add_many(brain, [LinkDraft("a", "b", "rel"), LinkDraft("a", "b", "rel", "2026-02", "2026-01")])
    assert svc.backlinks(brain, "b", temporal="all") == []  # checked before anything is written


def test_concurrent_closers_close_the_open_link_once(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    opened = svc.link(brain, "a", "b", "rel")

    results = _in_threads(6, lambda i: svc.link(brain, "a", "b", "rel", valid_until=f"2026-0{i + 1}"))
    ids = sorted(r.id for r in results if isinstance(r, NumberedLink))
    assert ids == [1, 2, 3, 4, 5, 6]  # one closed link 1, the others found nothing open
    assert svc.get(brain, opened.id).valid_until is not None
    assert all(ln.valid_until for ln in svc.backlinks(brain, "b", temporal="all"))


# -- backlinks -----------------------------------------------------------------------------------


def test_backlinks_active_or_all(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    cases = {  # source -> (valid_from, valid_until, active on 2026-03-15)
        "open": (None, None, True),
        "started": ("2026-03-15", None, True),
        "started_today_later": ("2026-03-15T23:00:00Z", None, False),  # as text, after "2026-03-15"
        "started_this_month": ("2026-03", None, True),
        "future": ("2026-03-16", None, False),
        "next_month": ("2026-04", None, False),
        "ends_today": (None, "2026-03-15", True),
        "ends_today_early": ("2020-01", "2026-03-15T00:00:01Z", True),
        "ended": ("2020-01-01", "2026-03-14", False),
        "ended_month": (None, "2026-03", False),  # a month ends on its first day
        "ends_later": (None, "2026-04", True),
    }
    for source, (start, end, _active) in cases.items():
        svc.link(brain, source, "target", "rel", start, end)
    everything = svc.backlinks(brain, "target", temporal="all")
    assert [ln.source_id for ln in everything] == list(reversed(cases))  # newest first
    active = svc.backlinks(brain, "target", at=DAY)
    assert [ln.source_id for ln in active] == [s for s in reversed(cases) if cases[s][2]]
    assert svc.backlinks(brain, "target") == active  # today is the clock's day (2026-03-15)
    later = {ln.source_id for ln in svc.backlinks(brain, "target", at=date(2026, 3, 16))}
    assert "future" in later and "ends_today" not in later
    first_of_march = {ln.source_id for ln in svc.backlinks(brain, "target", at=date(2026, 3, 1))}
    # as SQLite compares text: "2026-03" sorts before "2026-03-01", so a month as an end has
    # ended by its first day, and as a start holds from it
    assert "ended_month" not in first_of_march and "started_this_month" in first_of_march
    assert "started_today_later" in later
    assert svc.backlinks(brain, "source", temporal="all") == []  # only links *to* the document


def test_backlinks_limit_pages_past_inactive_links(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    for i in range(4):
        svc.link(brain, f"live_{i}", "t", "rel")
    for i in range(9):  # the newest links are all expired
        svc.link(brain, f"old_{i}", "t", "rel", valid_until="2020-01")
    assert [ln.source_id for ln in svc.backlinks(brain, "t", limit=3, at=DAY)] == [
        "live_3",
        "live_2",
        "live_1",
    ]
    assert len(svc.backlinks(brain, "t", limit=3, temporal="all")) == 3
    assert len(svc.backlinks(brain, "t", limit=100, at=DAY)) == 4
    assert _ids(svc.backlinks(brain, "t", limit=2, temporal="all")) == [13, 12]
    assert svc.backlinks(brain, "t", limit=0) == []
    with pytest.raises(InvalidInput):
        svc.backlinks(brain, "t", limit=-1)
    with pytest.raises(InvalidInput, match="invalid temporal filter: current"):
        svc.backlinks(brain, "t", temporal="current")  # type: ignore[arg-type]


# -- neighbourhoods ------------------------------------------------------------------------------


def test_graph_is_breadth_first_root_first_to_the_depth(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    for source, target in [("a", "b"), ("a", "c"), ("b", "d"), ("c", "e"), ("d", "f"), ("x", "a")]:
        svc.link(brain, source, target, "rel")
    zero = svc.graph(brain, "a", depth=0)
    assert (zero.nodes, zero.edges) == (["a"], [])
    one = svc.graph(brain, "a")  # depth 1 by default
    assert (one.nodes, _edges(one.edges)) == (["a", "b", "c"], [("a", "b"), ("a", "c")])
    two = svc.graph(brain, "a", depth=2)
    assert two.nodes == ["a", "b", "c", "d", "e"]
    assert _edges(two.edges) == [("a", "b"), ("a", "c"), ("b", "d"), ("c", "e")]
    assert svc.graph(brain, "a", depth=3).nodes[-1] == "f"
    assert svc.graph(brain, "lonely", depth=3).nodes == ["lonely"]
    with pytest.raises(InvalidInput):
        svc.graph(brain, "a", depth=-1)


def test_graph_depth_is_capped_at_ten(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.add_many(brain, [LinkDraft(f"n{i:02d}", f"n{i + 1:02d}", "next") for i in range(14)])
    assert svc.graph(brain, "n00", depth=99).nodes == [f"n{i:02d}" for i in range(11)]


def test_graph_caps_nodes_and_edges(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.add_many(brain, [LinkDraft("root", f"leaf_{i:02d}", "rel") for i in range(12)])
    svc.link(brain, "leaf_00", "root", "back")
    capped = svc.graph(brain, "root", node_cap=5)
    assert capped.nodes == ["root", "leaf_00", "leaf_01", "leaf_02", "leaf_03"]
    assert len(capped.edges) == 5  # the edge to the node that would pass the cap is kept
    by_edges = svc.graph(brain, "root", edge_cap=3)
    assert (len(by_edges.nodes), len(by_edges.edges)) == (4, 3)
    full = svc.graph(brain, "root", depth=2)
    assert (len(full.nodes), len(full.edges)) == (13, 13)


def test_graph_follows_cycles_once_and_skips_self_links(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.link(brain, "a", "b", "related")
    svc.link(brain, "b", "a", "related")
    svc.link(brain, "a", "a", "self")
    g = svc.graph(brain, "a", depth=10, temporal="all")
    assert g.nodes == ["a", "b"]
    assert _edges(g.edges) == [("a", "b"), ("b", "a")]


def test_graph_active_leaves_out_closed_and_future_links(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.link(brain, "alice", "acme", "works_at", "2020-01-01", "2020-12-31")
    svc.link(brain, "alice", "beta", "works_at", valid_from="2099-01-01")
    svc.link(brain, "alice", "gamma", "advises")
    assert svc.graph(brain, "alice", at=DAY).nodes == ["alice", "gamma"]
    assert svc.graph(brain, "alice", temporal="all").nodes == ["alice", "acme", "beta", "gamma"]


def test_each_read_is_one_partition_query_per_node_and_hop(records: RecordStore) -> None:
    counting = CountingRecords(records)
    svc, brain = _service(counting), _brain()
    # a -> b, c; b -> d, c; c -> a (a cycle); d -> e; e -> f (beyond depth 3)
    for source, target in [
        ("a", "b"),
        ("a", "c"),
        ("b", "d"),
        ("b", "c"),
        ("c", "a"),
        ("d", "e"),
        ("e", "f"),
    ]:
        svc.link(brain, source, target, "rel")
    counting.calls.clear()
    g = svc.graph(brain, "a", depth=3, temporal="all")
    assert g.nodes == ["a", "b", "c", "d", "e"]
    # one query on the outgoing partition of each node expanded (hops 0, 1, 2), nothing else
    assert counting.calls == [("query", f"links#brn_1#nout#{n}") for n in ["a", "b", "c", "d"]]
    counting.calls.clear()
    assert len(svc.backlinks(brain, "c")) == 2
    assert counting.calls == [("query", "links#brn_1#nin#c")]


def test_remove_all_of_a_document_drops_its_links_both_ways(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    svc.add_many(brain, [LinkDraft("hub", f"doc_{i:02d}", "cites") for i in range(40)])  # > one commit
    into = svc.link(brain, "src", "hub", "cites")
    svc.link(brain, "hub", "hub", "self")
    other = svc.link(brain, "src", "other", "cites")
    assert svc.remove_all_of(brain, "hub") == 42
    assert svc.graph(brain, "hub", temporal="all").edges == []
    assert (
        svc.backlinks(brain, "hub", temporal="all") == []
        and svc.backlinks(brain, "doc_07", temporal="all") == []
    )
    with pytest.raises(NotFound):
        svc.close(brain, into.id, "2026-01")  # its id is gone too
    assert svc.graph(brain, "src", temporal="all").edges == [other]
    assert svc.remove_all_of(brain, "hub") == 0
    assert svc.link(brain, "a", "b", "rel").id == 44  # ids are never reused


def test_numbered_and_keyed_links_live_side_by_side(records: RecordStore) -> None:
    svc, brain = _service(records), _brain()
    keyed = LinkRepository(records)
    entity_link = Link(id="lnk_1", brain_id="brn_1", source_id="a", target_id="b", kind="rel", created_at=T0)
    keyed.add(entity_link)
    numbered = svc.link(brain, "a", "b", "rel")
    assert keyed.outgoing("brn_1", "a") == [entity_link] and keyed.incoming("brn_1", "b") == [entity_link]
    assert svc.graph(brain, "a").edges == [numbered]
    assert svc.remove_all_of(brain, "a") == 1
    assert keyed.get("brn_1", "a", "rel", "b") == entity_link
    assert keyed.remove_all_of("brn_1", "a") == 1
