"""Races and crashes around a queued ingest's staged concept links, on every record store: after
each, every link of a document's chunks names a chunk id its reach record covers (a stage it
names, or a live id, below its `upto`: what an erasure reaches), and where the race allows it the
concept graph finds the version the document holds now (services/mnemosyne/concept_reach.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import DamagedStore, Forbidden
from cairn.domain.models import Brain, Document
from cairn.ports.records import Item
from cairn.services.documents.chunk_ids import LIVE, parse_chunk_id, staged_chunk_id
from cairn.services.ingest.ingest_steps import StagedIngest
from cairn.services.mnemosyne.concept_reach import ConceptReach, reach_key, reach_of
from tests.contract.test_concept_links_erased_contract import (
    PATH,
    erase,
    text_of,
    words_kept,
    words_of,
    written,
)
from tests.contract.test_concept_links_staged_contract import (
    as_an_earlier_release_left_it,
    linked_from,
    queued,
    stages_of,
    two,  # noqa: F401 (the fixture)
)
from tests.contract.test_concept_reach_sweep_contract import run_out, sweep_of
from tests.unit.test_staged_ingest import Context, run_steps


def uncovered(c: Container, brain: Brain) -> list[str]:
    """The chunk ids holding concept links that their document's reach record does not cover."""
    records, out = c.adapters.records, f"links#{brain.id}#out#"
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = records.scan([f"{out}chk_"], cursor=cursor)
        for item in page.items:
            ref = parse_chunk_id(item.pk.removeprefix(out))
            if ref is None or not item.sk.startswith("concept#"):
                continue
            held = records.get(*reach_key(brain.id, ref.document_id))
            try:
                reach = None if held is None else reach_of(held)
            except DamagedStore:
                reach = None
            if reach is None or ref.ordinal >= reach.upto or ref.stage not in reach.families:
                found.append(item.pk.removeprefix(out))
        if page.cursor is None:
            return sorted(set(found))
        cursor = page.cursor


def before_once(reach: ConceptReach, name: str, first: Callable[[], object]) -> None:
    """`first` runs once, just before the reach's `name` is next called (another process's work
    landing between a linker's steps)."""
    real = getattr(reach, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        setattr(reach, name, real)
        first()
        return real(*args, **kwargs)

    setattr(reach, name, wrapped)


def found_by_graph(c: Container, brain: Brain, doc: Document, stage: str) -> bool:
    hits = c.concepts.search([brain.id], "Where did the Quellmire Ferry Company move?", limit=5)
    return bool(hits) and hits[0].chunk_id == staged_chunk_id(doc.id, stage, 0)


def test_a_stale_linker_of_a_replaced_stage_leaves_the_next_versions_links(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """Another process read the first queued version's chunks; the second version is committed and
    linked before that linker raises the reach: the stale linker must not retire the links of the
    version the document holds now, and takes its own back."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    (first,) = stages_of(c, doc)
    seconds: list[Document] = []
    before_once(other.concepts.reach, "extend", lambda: seconds.append(queued(c, brain, 4)))
    other.concepts.index_document(brain.id, doc.id, text_of(10).decode())
    (second,) = stages_of(c, doc)
    assert uncovered(c, brain) == []
    assert (linked_from(c, doc, second), linked_from(c, doc, first)) == (4, 0)
    assert found_by_graph(c, brain, doc, second)
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_stale_linker_of_live_ids_leaves_the_links_of_the_queued_version_that_replaced_them(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10, link=False)
    before_once(other.concepts.reach, "extend", lambda: queued(c, brain, 4))
    other.concepts.index_document(brain.id, doc.id, text_of(10).decode())
    (stage,) = stages_of(c, doc)
    assert uncovered(c, brain) == []
    assert (linked_from(c, doc, stage), linked_from(c, doc, LIVE)) == (4, 0)
    assert found_by_graph(c, brain, doc, stage)


def test_an_erasure_between_a_linkers_extend_and_its_confirm_leaves_no_link(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    before_once(other.concepts.reach, "confirm", lambda: erase(c, brain))
    other.concepts.index_document(brain.id, doc.id, text_of(10).decode())
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*reach_key(brain.id, doc.id)) is None


def test_a_retire_racing_a_stale_linker_leaves_only_covered_links(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """The second version's retire of the first's links: between its removal and its record write,
    a linker of the first version (another process) links the first's chunks again."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    (first,) = stages_of(c, doc)
    chunks = [ch for ch in c.adapters.chunks.get_chunks(brain.id, doc.id) if ch.active]
    real_unlink = c.concepts.reach._unlink

    def unlink_then_relinked(*args: Any, **kwargs: Any) -> int:
        removed = real_unlink(*args, **kwargs)
        if first in args[2] and args[3].start == 0 and not relinked:  # retire's, not trim's
            relinked.append(True)
            other.concepts.reach.extend(brain.id, doc.id, 10, stages=[first])
            other.concepts.index(brain.id, text_of(10).decode(), chunks)
            other.concepts.reach.confirm(brain.id, doc.id, first)
        return removed

    relinked: list[bool] = []
    c.concepts.reach._unlink = unlink_then_relinked  # type: ignore[method-assign]
    queued(c, brain, 4)
    assert relinked
    assert uncovered(c, brain) == []
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


class Killed(Exception):
    """A process killed at that point."""


def killed_at(reach: ConceptReach, name: str) -> None:
    def kill(*_args: Any, **_kwargs: Any) -> Any:
        raise Killed(name)

    setattr(reach, name, kill)


@pytest.mark.parametrize("point", ["confirm", "retire"])
def test_a_linker_killed_before_it_retires_leaves_only_covered_links(
    two: tuple[Container, Container],  # noqa: F811
    point: str,
) -> None:
    """A queued version replaces a live one whose chunks were linked; its linker is killed after
    linking (before `confirm`, or before `retire`): the live links stay covered, before and after
    the linker runs again (the job's finalize retried), and the erasure takes them."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 10)
    killed_at(c.concepts.reach, point)
    with pytest.raises(Killed):
        queued(c, brain, 4)
    (stage,) = stages_of(c, doc)
    assert uncovered(c, brain) == []
    other.concepts.index_document(brain.id, doc.id, text_of(4).decode())
    assert uncovered(c, brain) == [] and linked_from(c, doc, stage) == 4
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def test_a_retire_killed_between_its_removal_and_its_record_write_leaves_covered_links(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    (first,) = stages_of(c, doc)
    real_unlink = c.concepts.reach._unlink

    def half(*args: Any, **kwargs: Any) -> int:
        real_unlink(*args, **kwargs)
        if first in args[2] and args[3].start == 0:  # retire's, not trim's
            raise Killed("retire")
        return 0

    c.concepts.reach._unlink = half  # type: ignore[method-assign]
    with pytest.raises(Killed):
        queued(c, brain, 4)
    assert uncovered(c, brain) == []
    (second,) = stages_of(c, doc)
    other.concepts.index_document(brain.id, doc.id, text_of(4).decode())
    assert uncovered(c, brain) == []
    assert (linked_from(c, doc, second), linked_from(c, doc, first)) == (4, 0)


DAMAGED = [
    {"upto": 4, "stages": "notalist"},
    {"upto": 4, "stages": ["NOT A STAGE"]},
    {"upto": -1},
    {"upto": True},  # a JSON boolean is a Python int
]


@pytest.mark.parametrize("data", DAMAGED, ids=lambda d: repr(d))
@pytest.mark.parametrize("then", ["erase", "delete", "rewrite", "ingest"])
def test_a_damaged_reach_of_two_stages_keeps_no_link_from_what_comes_next(
    two: tuple[Container, Container],  # noqa: F811
    data: dict[str, object],
    then: str,
) -> None:
    """Two queued versions' links (the first's not retired: a killed linker), then the reach record
    damaged: an erasure or deletion leaves no link, a rewrite or the next ingest only covered links of
    the chunks the document keeps."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = queued(c, brain, 10)
    real, c.concepts.reach.retire = c.concepts.reach.retire, lambda *_a, **_k: 0  # type: ignore[method-assign]
    queued(c, brain, 4)
    c.concepts.reach.retire = real  # type: ignore[method-assign]
    held = c.adapters.records.get(*reach_key(brain.id, doc.id))
    assert held is not None
    c.adapters.records.put(Item(*reach_key(brain.id, doc.id), data), held.version)
    if then == "erase":
        erase(c, brain)
    elif then == "delete":
        c.documents.delete(brain, PATH)
    elif then == "rewrite":
        c.documents.write(brain, PATH, text_of(2))
        assert uncovered(c, brain) == [] and words_kept(c.adapters.records, ["links#"]) <= words_of(range(2))
        erase(c, brain)
    else:
        queued(other, brain, 3)
        assert uncovered(c, brain) == [] and words_kept(c.adapters.records, ["links#"]) == words_of(range(3))
        erase(c, brain)
    assert words_kept(c.adapters.records) == set()


@pytest.mark.parametrize("point", ["extend", "confirm", "retire", "take_back"])
@pytest.mark.parametrize("landing", ["queued", "rewrite", "erase", "delete"])
def test_whatever_lands_between_a_staged_linkers_steps_leaves_only_covered_links(
    two: tuple[Container, Container],  # noqa: F811
    point: str,
    landing: str,
) -> None:
    """A queued version of 10 parts replaces a live one of 6, and just before one of its linker's
    steps another process commits a queued version of 4 parts, a rewrite to 2 parts, an erasure
    or a deletion: every link left is covered, and the links name only what the document holds."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 6)  # live ids' links: the queued version's linker retires them
    lands: dict[str, Callable[[], object]] = {
        "queued": lambda: queued(other, brain, 4),
        "rewrite": lambda: other.documents.write(brain, PATH, text_of(2)),
        "erase": lambda: erase(other, brain),
        "delete": lambda: other.documents.delete(brain, PATH),
    }
    if point == "take_back":  # reached when a retire took the stage off as it linked
        before_once(c.concepts.reach, "confirm", lambda: other.concepts.reach.retire(brain.id, doc.id, {"x"}))
    landed: list[object] = []
    before_once(c.concepts.reach, point, lambda: landed.append(lands[landing]()))
    result = c.ingest.ingest_bytes(brain, text_of(10), name="harbour.md", path=PATH)
    assert result.job_id
    with pytest.raises(Forbidden) if landing == "erase" else nullcontext():  # its scope was erased
        run_steps(StagedIngest(c.ingest, c.brains, c.adapters.clock), c.jobs.status(result.job_id))
    assert landed and uncovered(c, brain) == []
    if landing in ("erase", "delete"):
        assert words_kept(c.adapters.records) == set()
        return
    parts = 4 if landing == "queued" else 2
    (now,) = stages_of(c, doc)
    assert words_kept(c.adapters.records, ["links#"]) <= words_of(range(parts))
    assert {family for family in ("", *reach_of_doc(c, doc)) if linked_from(c, doc, family)} <= {now}
    erase(c, brain)
    assert words_kept(c.adapters.records) == set()


def reach_of_doc(c: Container, doc: Document) -> tuple[str, ...]:
    """The stages the document's reach names."""
    held = c.adapters.records.get(*reach_key(doc.brain_id, doc.id))
    return () if held is None else reach_of(held).stages


def test_a_queued_ingest_whose_batches_ran_in_any_order_links_every_chunk_once(
    two: tuple[Container, Container],  # noqa: F811
) -> None:
    """The state machine's Map runs the index steps concurrently: batches done last to first (one
    twice) leave the same links and reach as in order."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    doc = written(c, brain, 3)
    result = c.ingest.ingest_bytes(brain, text_of(10), name="harbour.md", path=PATH)
    assert result.job_id
    staged, ctx = StagedIngest(c.ingest, c.brains, c.adapters.clock, batch_size=3), Context()
    job = c.jobs.status(result.job_id)
    for name in ("validate", "extract", "chunk"):
        out = staged.steps().steps[name](job, ctx, {})
    for batch in [*reversed(out["batches"]), out["batches"][1]]:
        staged.index_batch(job, ctx, {"batch": batch})
    staged.finalize(job, ctx, {})
    (stage,) = stages_of(c, doc)
    assert uncovered(c, brain) == [] and reach_of_doc(c, doc) == (stage,)
    assert (linked_from(c, doc, stage), linked_from(c, doc, LIVE)) == (10, 0)
    assert words_kept(c.adapters.records, ["links#"]) == words_of(range(10))


@pytest.mark.parametrize("point", ["extend", "forget", "_unlink"])
def test_a_pass_killed_in_the_middle_of_a_page_leaves_covered_links_and_finishes_when_run_again(
    two: tuple[Container, Container],  # noqa: F811
    point: str,
) -> None:
    """An earlier release left two stages' links of an erased document and of a standing one with
    no stage named; the reach pass is killed as it raises a reach, as it removes the links of the
    erased one, or half-way through that removal; run again (its progress not saved), it finishes:
    the standing document's links covered, the erased one's gone."""
    c, _ = two
    brain = c.brains.create("Shore", slug="shore")
    gone, _, _ = as_an_earlier_release_left_it(c, brain)
    erase(c, brain)
    standing, _, _ = as_an_earlier_release_left_it(c, brain)
    now = c.adapters.clock.now().isoformat()
    c.adapters.records.put(Item("concept-reach-pass", "pass", {"started": now, "finished": True}))
    c.adapters.records.put(Item(f"links#{brain.id}#reach-done", "concept", {"at": now}))
    sweep = sweep_of(c, step_items=7)
    killed_at(c.concepts.reach, point)
    with pytest.raises(Killed):
        run_out(c, sweep)
    del c.concepts.reach.__dict__[point]  # the process started again
    run_out(c, sweep)
    assert uncovered(c, brain) == []
    assert stages_of_links(c, gone) == set()
    assert c.adapters.records.get(*reach_key(brain.id, gone.id)) is None
    erase(c, brain)
    assert words_kept(c.adapters.records) == set() and standing.id != gone.id


def stages_of_links(c: Container, doc: Document) -> set[str]:
    """The stages of the document's chunk ids holding links."""
    page = c.adapters.records.scan([f"links#{doc.brain_id}#out#chk_"])
    refs = [parse_chunk_id(item.pk.partition("#out#")[2]) for item in page.items]
    return {ref.stage for ref in refs if ref is not None and ref.document_id == doc.id}
