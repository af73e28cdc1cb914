"""Two ingests of one path racing leave the image references of the document that stands, on every
record store, whichever records first (services/mnemosyne/image_items.py).

An ingest records the images a document shows after its write commits, outside the path lock
(the fault point `ingest.written`), so a second ingest of the same path can commit, and record,
between the first one's commit and its record, or while it records. Each test holds the first
ingest (A) in a thread at that point, runs the second (B) and lets A go on at a chosen moment;
afterwards the references, and the image's captions, must be B's (none once the path is deleted).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.ports.records import RecordStore
from cairn.services.mnemosyne.image_items import ImageItems
from cairn.services.mnemosyne.image_refs import by_document, by_image, image_refs_prefix
from tests.contract.test_image_refs_erased_contract import IMAGE, REPORT, captions, ingest, shore

WAIT_S = 60.0
A_ALT = "Figure 1: the Quillmarsh plan"
B_ALT = "Figure 2: the heron at dawn"


def shown(alt: str) -> bytes:
    return f"# Report\n\n![{alt}](/{IMAGE})\n".encode()


def images_of(c: Container) -> ImageItems:
    images = c.ingest.images
    assert images is not None
    return images


@contextmanager
def held_at_written(c: Container, brain: Brain, alt: str) -> Iterator[Callable[[], None]]:
    """An ingest of REPORT showing the image as `alt`, run in a thread and held at `ingest.written`
    (its document committed, its references not recorded); yields what lets it go on and waits
    for its end."""
    reached, go = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def hold() -> None:
        reached.set()
        assert go.wait(WAIT_S)

    def run() -> None:
        try:
            ingest(c, brain, REPORT, shown(alt))
        except BaseException as exc:  # re-raised in the test's thread
            failed.append(exc)
        finally:
            reached.set()

    thread = threading.Thread(target=run, name=f"ingest {alt}")
    with faults.armed("ingest.written", action=hold):
        thread.start()
        assert reached.wait(WAIT_S)
    assert not failed, failed

    def finish() -> None:
        go.set()
        thread.join(WAIT_S)
        assert not thread.is_alive()
        if failed:
            raise failed[0]

    try:
        yield finish
    finally:
        go.set()
        thread.join(WAIT_S)


class _Hooked:
    """The image references' store, running `then` (once) right after the first call of its method
    `name` that touches an image reference."""

    def __init__(self, inner: RecordStore, name: str, then: Callable[[], None]) -> None:
        self.inner, self.name, self.then, self.fired = inner, name, then, False

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name != self.name:
            return found

        def called(*args: Any, **kwargs: Any) -> Any:
            answer = found(*args, **kwargs)
            if not self.fired and "imgref#" in repr(args):
                self.fired = True
                self.then()
            return answer

        return called


def references(c: Container, brain: Brain) -> dict[tuple[str, str], str | None]:
    """(pk, sk) -> alt of every image reference of the brain (the owner mark left out)."""
    refs = images_of(c).refs
    made = refs.made_by(brain.id, REPORT)
    found = {(by_document(brain.id, REPORT), image): data.get("alt") for image, data in made.items()}
    found |= {
        (by_image(brain.id, IMAGE), path): data.get("alt") for path, data in refs.of_image(brain.id, IMAGE)
    }
    return found


def b_stands(c: Container, brain: Brain) -> None:
    assert references(c, brain) == {
        (by_document(brain.id, REPORT), IMAGE): B_ALT,
        (by_image(brain.id, IMAGE), REPORT): B_ALT,
    }
    assert captions(c, brain) == [B_ALT]


def test_the_earlier_ingest_recording_after_the_later_one_leaves_the_later_ones_references(
    c: Container,
) -> None:
    """A commits, B commits and records, then A records: A's references are not the document's,
    and B's must be what is left (before: A wrote over B's, read back B's document and took
    every reference back, so the image lost B's caption until the next ingest)."""
    brain = shore(c)
    with held_at_written(c, brain, A_ALT) as finish_a:
        ingest(c, brain, REPORT, shown(B_ALT))
        b_stands(c, brain)
        finish_a()
    b_stands(c, brain)


def test_the_earlier_ingest_recording_before_the_later_one_leaves_the_later_ones_references(
    c: Container,
) -> None:
    """The reverse order: A commits, B commits, A records (its document no longer stands), then B."""
    brain = shore(c)
    with held_at_written(c, brain, A_ALT) as finish_a, faults.armed("ingest.written", action=finish_a):
        ingest(c, brain, REPORT, shown(B_ALT))
    b_stands(c, brain)


def test_the_later_ingest_recording_between_the_earlier_ones_read_and_write_keeps_its_references(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commits, B commits; A reads the references, B records all of its own, then A goes on with
    what it read (before: A wrote its references over B's, read B's document back and took every
    reference back)."""
    brain = shore(c)
    refs = images_of(c).refs
    with held_at_written(c, brain, A_ALT) as finish_a, held_at_written(c, brain, B_ALT) as finish_b:
        hooked = _Hooked(refs.records, "query", finish_b)
        monkeypatch.setattr(refs, "records", hooked)
        finish_a()
        assert hooked.fired
    b_stands(c, brain)


def test_the_later_ingest_written_and_recorded_while_the_earlier_one_records_keeps_its_references(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commits and writes its references; B is ingested whole (written, references recorded);
    then A reads its document back (before: it found B's and took every reference back, B's
    among them)."""
    brain = shore(c)
    refs = images_of(c).refs
    with held_at_written(c, brain, A_ALT) as finish_a:
        hooked = _Hooked(refs.records, "transact", lambda: ingest(c, brain, REPORT, shown(B_ALT)))
        monkeypatch.setattr(refs, "records", hooked)
        finish_a()
        assert hooked.fired
    b_stands(c, brain)


@pytest.mark.parametrize("a_first", [True, False], ids=["a-records-first", "b-records-first"])
def test_a_delete_after_both_ingests_leaves_no_reference_whichever_records_first(
    c: Container, a_first: bool
) -> None:
    """Both ingests committed, then the document is deleted (its `follow` run) before either
    records: nothing is left, as before."""
    brain = shore(c)
    with held_at_written(c, brain, A_ALT) as finish_a, held_at_written(c, brain, B_ALT) as finish_b:
        with access.as_system():
            c.documents.delete(brain, REPORT)
        for finish in (finish_a, finish_b) if a_first else (finish_b, finish_a):
            finish()
    assert references(c, brain) == {}
    assert c.adapters.records.scan([image_refs_prefix(brain.id)]).items == []  # nothing else either
    assert captions(c, brain) == []


def test_a_delete_s_follow_running_after_the_path_is_ingested_again_keeps_the_new_references(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A is ingested and recorded; a delete commits and its `follow` reads A's references; B is
    then ingested at the path, whole; the follow goes on (before: it removed B's references, read
    again, and the image lost B's caption)."""
    brain = shore(c)
    ingest(c, brain, REPORT, shown(A_ALT))
    refs = images_of(c).refs
    hooked = _Hooked(refs.records, "query", lambda: ingest(c, brain, REPORT, shown(B_ALT)))
    monkeypatch.setattr(refs, "records", hooked)
    with access.as_system():
        c.documents.delete(brain, REPORT)
    assert hooked.fired
    b_stands(c, brain)
