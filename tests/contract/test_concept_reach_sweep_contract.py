"""The pass over the concept links earlier releases left without a reach, on every record store
(services/mnemosyne/concept_reach_sweep.py): a document that shrank under such a release is erased
whole after it, the links such a release's erasure left go, the pass stops at its budget or a stop
and resumes where it was, runs once per brain, and an erasure or a linker racing it leaves nothing.

The earlier release's state is made by removing the reach records this release writes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.bootstrap.sweep import index_sweeper
from cairn.domain.models import Brain, Document
from cairn.ports.records import Item
from cairn.services.mnemosyne.concept_reach import reach_key
from cairn.services.mnemosyne.concept_reach_sweep import LATE_S, PASS_KEY, ReachSweep, done_key
from tests.contract.test_concept_links_erased_contract import (
    PATH,
    erase,
    strayed,
    text_of,
    two,  # noqa: F401  (the fixture)
    words_kept,
    words_of,
    written,
)
from tests.support.read_budget import read_budget


class _Racing:
    """`inner` with `racer` run once right after its `nth` call of `method` returns: the pass has read
    what it asked for (its links, the documents, the reaches), the racer (an erasure, a linker) then
    commits, and the pass goes on after."""

    def __init__(self, inner: Any, method: str, racer: Callable[[], object], nth: int = 1) -> None:
        self.inner, self.method, self.racer, self.nth = inner, method, racer, nth
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name != self.method:
            return found

        def called(*args: Any, **kwargs: Any) -> Any:
            answer = found(*args, **kwargs)
            self.calls += 1
            if self.calls == self.nth:
                self.racer()
            return answer

        return called


def sweep_of(
    c: Container, records: Any = None, *, documents: Any = None, step_items: int = 500
) -> ReachSweep:
    return ReachSweep(
        records or c.adapters.records,
        c.concepts.reach,
        documents or c.documents.repo,
        c.adapters.clock,
        step_items=step_items,
    )


def run_out(c: Container, sweep: ReachSweep) -> int:
    """Steps until the pass is done; how many."""
    with access.as_system():
        for steps in range(1, 200):
            if sweep.step(c.brains.own):
                return steps
    raise AssertionError("the pass never ends")


def shrunk_before(c: Container, brain: Brain, path_parts: int = 10) -> Document:
    """A document an earlier release wrote with `path_parts` chunks, linked, then rewrote to 3
    without linking: links on chunks 0..9, no reach."""
    doc = written(c, brain, path_parts)
    written(c, brain, 3, link=False, earlier=True)
    c.adapters.records.delete(*reach_key(brain.id, doc.id))
    return doc


def test_a_document_that_shrank_under_an_earlier_release_is_erased_whole_after_the_pass(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    index_sweeper(c).tick()  # the sweep's chore
    reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert reach is not None and reach.data == {"upto": 10}
    assert words_kept(c.adapters.records) == words_of(range(10))  # a live document's links stay
    assert c.adapters.records.get(*done_key(brain.id)) is not None
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_the_links_an_earlier_release_left_of_a_document_it_erased_go(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    erase(c, brain)
    assert words_kept(c.adapters.records) == words_of(range(3, 10))  # what that erasure left
    run_out(c, sweep_of(c))
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


def test_the_pass_stops_at_its_budget_and_at_a_stop_and_resumes_where_it_was(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, _ = two
    brains = [c.brains.create(f"Shore {n}", slug=f"shore-{n}") for n in range(2)]
    docs = [shrunk_before(c, brain, 5) for brain in brains]
    for brain in brains:
        erase(c, brain)  # chunks 3 and 4's links left, as an earlier release's erasure left them
    sweep = sweep_of(c, step_items=1)
    with access.as_system():
        assert sweep.carry_on(c.brains.own, budget_s=0.0, stop=lambda: False) == 0
        assert c.adapters.records.get(*PASS_KEY) is None
        asked = iter(range(100))
        assert sweep.carry_on(c.brains.own, budget_s=60.0, stop=lambda: next(asked) >= 3) == 3
    held = c.adapters.records.get(*PASS_KEY)
    assert held is not None and sorted(held.data["brains"]) == sorted(b.id for b in brains)
    assert held.data["cursor"] is not None  # where the next tick goes on
    assert all(c.adapters.records.get(*done_key(b.id)) is None for b in brains)
    assert set() < words_kept(c.adapters.records) <= words_of(range(3, 5))  # not all done yet
    counted = _Racing(c.adapters.records, "scan", lambda: None)
    with access.as_system():
        started = time.monotonic()
        steps = sweep_of(c, counted, step_items=1).carry_on(c.brains.own, budget_s=60.0, stop=lambda: False)
    assert time.monotonic() - started < 60.0 and steps > 1
    assert words_kept(c.adapters.records) == set()
    assert all(
        c.adapters.records.get(*reach_key(b.id, d.id)) is None for b, d in zip(brains, docs, strict=True)
    )
    assert all(c.adapters.records.get(*done_key(b.id)) is not None for b in brains)
    scans = counted.calls
    assert run_out(c, sweep_of(c, counted)) == 1 and counted.calls == scans  # once per brain
    assert "finished" not in c.adapters.records.get(*PASS_KEY).data  # type: ignore[union-attr]
    c.adapters.clock.advance(LATE_S)  # type: ignore[attr-defined]
    assert run_out(c, sweep_of(c, counted)) == 1  # no brain made since needs it: finished

    def unasked() -> list[Brain]:
        raise AssertionError("a finished pass lists no brain")

    with access.as_system():
        assert sweep_of(c, counted).step(unasked) is True and counted.calls == scans


def test_an_erasure_racing_the_pass_leaves_no_link(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """The erasure commits as the pass reads the documents its links name, one in the scan's first
    page (standing then): the pass raised the reach before it read, so the erasure's removal,
    reading the reach after, removes every link it names; one before finds it gone."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    racing = _Racing(c.documents.repo, "get_many_by_id", lambda: erase(c, brain))
    run_out(c, sweep_of(c, documents=racing))
    assert racing.calls >= 1
    assert c.documents.repo.stored_by_id(doc.id) is None
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


def test_a_linker_racing_the_pass_keeps_the_reach_over_every_link(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """The rewrite's linker makes the reach (3) after the pass read the links of chunks 0..9: the pass
    raises it over them all, and the erasure after removes them."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)

    def linked() -> None:
        other.concepts.index_document(brain.id, doc.id, text_of(3).decode())
        reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
        assert reach is not None and reach.data == {"upto": 3}

    run_out(c, sweep_of(c, _Racing(c.adapters.records, "scan", linked)))
    reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert reach is not None and reach.data == {"upto": 10}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_linker_making_the_reach_as_the_pass_makes_it_is_raised_over(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """The pass read no reach for the document (its second batch read: the first is the brains'
    marks), then the rewrite's linker made one (3): the pass's batch of new reaches loses, and each
    is raised one at a time, over every link it read."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    racing = _Racing(
        c.adapters.records,
        "get_many",
        lambda: other.concepts.index_document(brain.id, doc.id, text_of(3).decode()),
        nth=2,
    )
    run_out(c, sweep_of(c, racing))
    assert racing.calls >= 2
    reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert reach is not None and reach.data == {"upto": 10}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_damaged_reach_is_replaced_by_what_the_pass_reads(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    c.adapters.records.put(Item(*reach_key(brain.id, doc.id), {"upto": "ten"}))
    run_out(c, sweep_of(c))
    reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert reach is not None and reach.data == {"upto": 10}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


@pytest.mark.parametrize(
    "upto", [10**12, -5, 2.5, "1000000000000"], ids=["huge", "negative", "float", "digits"]
)
def test_an_absurd_reach_of_a_document_gone_is_replaced_and_its_links_go_in_bounded_reads(
    two: tuple[Container, Container],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    upto: object,
) -> None:
    """A reach changed outside Cairn to a count no document reaches (past MAX_REACH), of a document
    an earlier release erased: the pass replaces it with what it reads, as a damaged one, and
    removes those links, where it queried each of 10**12 chunk ids."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    erase(c, brain)  # that release's erasure left the links of chunks 3..9
    records = c.adapters.records
    records.put(Item(*reach_key(brain.id, doc.id), {"upto": upto}))
    with read_budget(monkeypatch, records, 1_000) as reads:
        run_out(c, sweep_of(c))
    assert reads.count < 1_000
    assert words_kept(records) == set()
    assert records.get(*reach_key(brain.id, doc.id)) is None


@pytest.mark.parametrize("erased", [True, False], ids=["document_gone", "document_stored"])
def test_a_link_of_a_chunk_id_with_an_absurd_ordinal_is_removed_by_the_pass_in_bounded_reads(
    two: tuple[Container, Container],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    erased: bool,
) -> None:
    """A concept link whose chunk id was changed outside Cairn to ordinal 10**12: the pass raised
    the document's reach to it (read as damaged, its widest reach that same ordinal), then queried
    each chunk id below it to remove the links of a document gone. It removes that link and
    leaves it out of the reach: a stored document's reach covers its other links, for its erasure."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    strayed(c, brain, doc, 10**12)
    if erased:
        erase(c, brain)  # that release's erasure left the links of chunks 3..9, and the stray one
    records = c.adapters.records
    with read_budget(monkeypatch, records, 1_000) as reads:
        run_out(c, sweep_of(c))
    assert reads.count < 1_000
    assert [i.pk for i in records.scan([f"links#{brain.id}#out#"]).items if "999" in i.pk] == []
    if erased:
        assert words_kept(records) == set()
        assert records.get(*reach_key(brain.id, doc.id)) is None
        return
    reach = records.get(*reach_key(brain.id, doc.id))
    assert reach is not None and reach.data == {"upto": 10}
    with read_budget(monkeypatch, records, 2_000):
        erase(c, brain)
    assert words_kept(records) == set()


def test_a_brain_deleted_as_the_pass_scans_it_is_left_no_record(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, _ = two
    kept, gone = (c.brains.create(f"Shore {n}", slug=f"shore-{n}") for n in range(2))
    for brain in (kept, gone):
        shrunk_before(c, brain)

    def deleted() -> None:
        with access.as_system():
            c.erasure.delete_brain(gone.slug)

    run_out(c, sweep_of(c, _Racing(c.adapters.records, "scan", deleted)))
    assert c.adapters.records.get(*done_key(kept.id)) is not None
    assert c.adapters.records.scan([f"links#{gone.id}#"]).items == []


def test_a_damaged_pass_record_starts_the_pass_again(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = shrunk_before(c, brain)
    for damaged in ({"started": "soon"}, {"started": "2026-01-01T00:00:00"}, {"brains": 3}, {}):
        c.adapters.records.put(Item(*PASS_KEY, {"started": c.adapters.clock.now().isoformat(), **damaged}))
        run_out(c, sweep_of(c))
        reach = c.adapters.records.get(*reach_key(brain.id, doc.id))
        assert reach is not None and reach.data == {"upto": 10}
        assert c.adapters.records.get(*done_key(brain.id)) is not None
        c.adapters.records.delete(*done_key(brain.id))


def test_a_damaged_document_record_is_taken_for_stored_and_holds_no_brain_up(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """A document whose record no longer reads keeps its links (bounded by the reach the pass
    gives it); the pass goes on over the other documents and brains and ends, where every step
    failed on it and no brain was ever done."""
    c, _ = two
    damaged_in, other = (c.brains.create(f"Shore {n}", slug=f"shore-{n}") for n in range(2))
    damaged = shrunk_before(c, damaged_in)
    erased_before = shrunk_before(c, other)
    erase(c, other)  # an earlier release's erasure: chunks 3..9's links left
    held = c.adapters.records.get(f"brain#{damaged_in.id}", f"doc#{PATH}")
    assert held is not None
    c.adapters.records.put(Item(held.pk, held.sk, {"path": 5}), held.version)
    run_out(c, sweep_of(c))
    assert all(c.adapters.records.get(*done_key(b.id)) is not None for b in (damaged_in, other))
    reach = c.adapters.records.get(*reach_key(damaged_in.id, damaged.id))
    assert reach is not None and reach.data == {"upto": 10}
    assert c.adapters.records.scan([f"links#{other.id}#out#"]).items == []
    assert c.adapters.records.get(*reach_key(other.id, erased_before.id)) is None
