"""The pass over the image references earlier releases left of documents gone, on every record store
(services/mnemosyne/image_refs_sweep.py): a deleted or erased document's references go (both ways)
and the image is re-indexed without their text, a standing document's stay, the pass resumes where
a stop or a fault left it, an ingest re-recording a reference as the pass removes it wins, and the
maintenance report (`cairn check`) names the brains it has still to scan.

The earlier release's state is made as its race left it: references written through ImageRefs for
a document no longer standing, the delete's `follow` finding nothing to remove."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.cli.check import _say_maintenance
from cairn.ports.records import Item, RecordStore
from cairn.services.mnemosyne.image_items import ImageItems
from cairn.services.mnemosyne.image_refs import MARK_SK, by_document, by_image, image_refs_prefix
from cairn.services.mnemosyne.image_refs_sweep import PASS_KEY, ImageRefsSweep, done_key
from cairn.services.repositories import doc_key
from tests.contract.test_image_refs_erased_contract import (
    IMAGE,
    REPORT,
    SECRET,
    captions,
    image_text,
    ingest,
    jpeg,
    shore,
    shown,
    words_kept,
)

KEPT = "notes/kept.md"
ERASED = "memory/agent/ada/old.md"


def images_of(c: Container) -> ImageItems:
    images = c.ingest.images
    assert images is not None
    return images


def sweep_of(c: Container, records: Any = None, *, step_items: int = 200) -> ImageRefsSweep:
    return ImageRefsSweep(
        records or c.adapters.records, images_of(c), c.brains.repo, c.adapters.clock, step_items=step_items
    )


def run_out(c: Container, sweep: ImageRefsSweep) -> int:
    """Steps until the pass is done; how many."""
    with access.as_system():
        for steps in range(1, 200):
            if sweep.step(c.brains.own):
                return steps
    raise AssertionError("the pass never ends")


def refs_kept(records: RecordStore, brain: Brain) -> list[tuple[str, str]]:
    """The brain's image references, both ways (not the pass's mark beside them, nor the marks of
    whose they are)."""
    page = records.scan([f"{image_refs_prefix(brain.id)}to#", f"{image_refs_prefix(brain.id)}from#"])
    return [(item.pk, item.sk) for item in page.items if item.sk != MARK_SK]


def marks_kept(records: RecordStore, brain: Brain) -> list[str]:
    """The document paths whose references have a mark (image_refs.py)."""
    page = records.scan([f"{image_refs_prefix(brain.id)}from#"])
    return sorted(item.pk.partition("#from#")[2] for item in page.items if item.sk == MARK_SK)


def left_over(c: Container, brain: Brain, path: str, alt: str) -> None:
    """References of a document that is not at `path`, as the earlier release's race left them."""
    images_of(c).refs.replace(brain.id, path, {IMAGE: {"alt": alt, "caption": None, "title": None}})


class _Spy:
    """`inner` with `hook(name, args, answer)` told after each call of its methods."""

    def __init__(self, inner: Any, hook: Callable[[str, tuple[Any, ...], dict[str, Any]], None]) -> None:
        self.inner, self.hook = inner, hook

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if not callable(found):
            return found

        def called(*args: Any, **kwargs: Any) -> Any:
            self.hook(name, args, kwargs)
            return found(*args, **kwargs)

        return called


def test_a_deleted_or_erased_document_s_references_go_and_a_standing_one_s_stay(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = shore(c)
    ingest(c, brain, KEPT, shown("A heron at dawn"))
    ingest(c, brain, REPORT, SECRET)
    images = images_of(c)

    def lost(*_args: object) -> set[str]:
        raise RuntimeError("as the race left it: the delete's follow found nothing")

    with monkeypatch.context() as patched, access.as_system():
        patched.setattr(images.refs, "replace", lost)
        c.documents.delete(brain, REPORT)  # its follow fails (logged): references and caption stay
    left_over(c, brain, ERASED, "Figure 2: the Quillmarsh plan")  # a document erased: no record
    assert captions(c, brain) == ["Figure 1: secret merger with Globex", "A heron at dawn"]
    assert len(refs_kept(c.adapters.records, brain)) == 6
    assert marks_kept(c.adapters.records, brain) == sorted([KEPT, REPORT])

    run_out(c, sweep_of(c))

    assert sorted(refs_kept(c.adapters.records, brain)) == [
        (by_document(brain.id, KEPT), IMAGE),
        (by_image(brain.id, IMAGE), KEPT),
    ]
    assert marks_kept(c.adapters.records, brain) == [KEPT]  # the deleted document's went with them
    assert captions(c, brain) == ["A heron at dawn"]  # the image re-indexed
    assert "globex" not in image_text(c, brain) and "heron" in image_text(c, brain)
    assert words_kept(c.adapters.records) == set()
    assert c.adapters.records.get(*done_key(brain.id)) is not None
    with access.as_system():  # a later document at either path makes no caption of them
        c.documents.write(brain, REPORT, b"# Report\n\nA new note at the same path.\n")
        c.documents.write(brain, ERASED, b"# Old\n\nA new note at the same path.\n")
    ingest(c, brain, IMAGE, jpeg())  # the image's captions read again
    assert captions(c, brain) == ["A heron at dawn"] and words_kept(c.adapters.records) == set()


def test_the_pass_resumes_from_its_cursor_after_a_stop_and_after_a_fault(c: Container) -> None:
    brains = [shore(c)]
    with access.as_system():
        brains.append(c.brains.create("Bay", slug="bay"))
    for brain in brains:
        for n in range(3):
            left_over(c, brain, f"memory/agent/ada/old-{n}.md", "Figure 1: secret merger with Globex")
    asked = iter(range(100))
    with access.as_system():
        assert sweep_of(c, step_items=1).carry_on(c.brains.own, budget_s=60.0, stop=lambda: next(asked) >= 2)
    held = c.adapters.records.get(*PASS_KEY)
    assert held is not None and held.data["cursor"] is not None  # where the next tick goes on
    assert sorted(held.data["brains"]) == sorted(b.id for b in brains)

    def fault(name: str, args: tuple[Any, ...], _kwargs: dict[str, Any]) -> None:
        if name == "transact":
            raise RuntimeError("the process failed mid-step")

    with access.as_system(), pytest.raises(RuntimeError, match="mid-step"):
        sweep_of(c, _Spy(c.adapters.records, fault), step_items=1).carry_on(
            c.brains.own, budget_s=60.0, stop=lambda: False
        )
    held = c.adapters.records.get(*PASS_KEY)
    assert held is not None and held.data["cursor"] is not None
    assert all(c.adapters.records.get(*done_key(b.id)) is None for b in brains)
    assert words_kept(c.adapters.records) == {"globex"}  # not all removed yet

    cursors: list[object] = []

    def scanned(name: str, _args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if name == "scan":
            cursors.append(kwargs.get("cursor"))

    run_out(c, sweep_of(c, _Spy(c.adapters.records, scanned), step_items=1))
    assert cursors[0] == held.data["cursor"]  # went on where it was, not from the start
    assert words_kept(c.adapters.records) == set()
    assert all(refs_kept(c.adapters.records, b) == [] for b in brains)
    assert all(c.adapters.records.get(*done_key(b.id)) is not None for b in brains)
    scans = len(cursors)
    assert run_out(c, sweep_of(c, _Spy(c.adapters.records, scanned))) == 1 and len(cursors) == scans


def test_a_brain_without_image_references_costs_its_group_s_one_scan(c: Container) -> None:
    with access.as_system():
        brain = c.brains.create("Plain", slug="plain")
        c.documents.write(brain, "notes/a.md", b"# A\n\nNo image here.\n")
    calls: list[str] = []
    read: list[tuple[str, str]] = []

    def counted(name: str, args: tuple[Any, ...], _kwargs: dict[str, Any]) -> None:
        calls.append(name)
        if name == "get_many":
            read.extend(args[0])

    with access.as_system():
        assert not sweep_of(c, _Spy(c.adapters.records, counted)).step(c.brains.own)
    assert calls.count("scan") == 1 and "transact" not in calls  # its scan page, nothing removed
    assert read == [done_key(brain.id)]  # its mark looked for: no document is read
    assert c.adapters.records.get(*done_key(brain.id)) is not None


def test_a_reference_an_ingest_records_again_as_the_pass_removes_it_is_kept(c: Container) -> None:
    """The pass read the references and found their document absent; an ingest then writes it and
    records its references (both ways, at once): the pass's removal of that one fails on its version
    and it stays, while the others of the same page go."""
    brain = shore(c)
    left_over(c, brain, REPORT, "Figure 1: secret merger with Globex")
    left_over(c, brain, ERASED, "Figure 2: the Quillmarsh plan")
    raced: list[bool] = []

    def racer(name: str, args: tuple[Any, ...], _kwargs: dict[str, Any]) -> None:
        if name == "transact" and not raced:  # the documents were read: the removal comes next
            raced.append(True)
            ingest(c, brain, REPORT, shown("Figure 3: the new plan"))

    run_out(c, sweep_of(c, _Spy(c.adapters.records, racer)))
    assert raced == [True]
    assert sorted(refs_kept(c.adapters.records, brain)) == [
        (by_document(brain.id, REPORT), IMAGE),
        (by_image(brain.id, IMAGE), REPORT),
    ]
    assert captions(c, brain) == ["Figure 3: the new plan"]
    assert words_kept(c.adapters.records) == set()


def test_a_document_read_standing_keeps_its_references(c: Container) -> None:
    """A document written at the path before the pass reads it is standing: its references stay."""
    brain = shore(c)
    left_over(c, brain, REPORT, "Figure 3: the new plan")
    read: list[Sequence[tuple[str, str]]] = []

    def written_first(name: str, args: tuple[Any, ...], _kwargs: dict[str, Any]) -> None:
        if name == "get_many" and doc_key(brain.id, REPORT) in args[0] and not read:
            read.append(args[0])
            ingest(c, brain, REPORT, shown("Figure 3: the new plan"))

    run_out(c, sweep_of(c, _Spy(c.adapters.records, written_first)))
    assert read and len(refs_kept(c.adapters.records, brain)) == 2
    assert images_of(c).refs.made_by(brain.id, REPORT) == {
        IMAGE: {"alt": "Figure 3: the new plan", "caption": None, "title": None}
    }


def test_the_report_and_cairn_check_name_the_brains_still_to_scan(
    c: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    brain = shore(c)
    left_over(c, brain, REPORT, "Figure 1: secret merger with Globex")
    with access.as_system():
        other = c.brains.create("Bay", slug="bay")
    maintenance = c.health.maintenance
    assert maintenance is not None
    found = maintenance.report(deletions=False)
    assert (sorted(found.image_refs_to_do), found.image_refs_done) == (sorted([brain.id, other.id]), 0)
    assert not found.quiet
    said = found.summary(named=True)
    assert (said["image_refs_to_do"], said["image_refs_done"]) == (2, 0)
    assert sorted(said["brains"]["image_refs_to_do"]) == sorted([brain.id, other.id])  # type: ignore[index]
    with access.as_system():
        _say_maintenance(c, [brain, other], deletions=False)
    out = capsys.readouterr().out
    assert "brain shore: the sweep's image-reference pass has not scanned it yet" in out
    assert "brain bay: the sweep's image-reference pass" in out

    run_out(c, sweep_of(c))
    found = maintenance.report(deletions=False)
    assert (found.image_refs_to_do, found.image_refs_done) == ((), 2)
    with access.as_system():
        _say_maintenance(c, [brain, other], deletions=False)
    assert "image-reference" not in capsys.readouterr().out
    c.adapters.records.put(Item(*PASS_KEY, {"started": "not a time"}))  # damaged: done brains stay done
    assert maintenance.report(deletions=False).image_refs_to_do == ()
