"""Two processes resuming the same interrupted erasure at once (a retried Step Functions task and a
`cairn` resume, two Lambda retries), on every record store: the receipt counts exactly what was
removed, whatever the interleaving, and no record of its progress is left (services/erasure/log.py
`Progress`: each write of the counts is conditional on the version read, and a brain another
process finished first has what this one removed since added to the receipt)."""

from __future__ import annotations

import pytest

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container
from cairn.services.erasure.log import Progress
from tests.contract.test_concept_links_erased_contract import two  # noqa: F401  (the fixture)

AGENT = "ada"


def test_a_resume_that_loses_a_document_to_another_resume_still_counts_the_bytes_it_removed(
    two: tuple[Container, Container],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first attempt dies after the first document. A resume in process A removes the second
    document's bytes; before its commit, a resume in process B erases the second and third
    documents and finishes the brain. A's commit then finds the document gone: the bytes it removed
    are counted by A alone, after B counted the brain."""
    a, b = two
    with access.as_system():
        brain = a.brains.create("Shore", slug="shore")
        for n in range(3):
            a.documents.write(brain, f"memory/agent/{AGENT}/{n}.md", f"Note {n} of the agent.".encode())
        monkeypatch.setattr(a.erasure, "_count_stopped", lambda *_: None)  # killed: nothing more runs
        with faults.armed("erasure.documents", at=1), pytest.raises(faults.InjectedFault):
            a.erasure.erase("agent_scope", AGENT, [brain.slug])
        monkeypatch.undo()
        (running,) = list(a.erasure.erasures.running())

        def b_resumes() -> None:
            (finished,) = b.erasure.resume()
            assert finished.status == "completed"

        with faults.armed("documents.bytes_erased", at=1, action=b_resumes):
            (resumed,) = a.erasure.resume()
        receipt = a.erasure.receipt(running.receipt.id)  # what GET /v1/erasures/{id} answers
    assert receipt.status == "completed" and resumed == receipt
    assert (receipt.removed["documents"], receipt.removed["chunks"], receipt.removed["blobs"]) == (3, 3, 3)
    assert a.adapters.records.query("erasure-progress", "").items == []


class Killed(BaseException):
    """kill -9 at that point: nothing after it runs (a BaseException: no handler on the way takes it)."""


def erasure_entries(c: Container, erasure_id: str) -> list[dict[str, object]]:
    """The audit's `erasure` entries of this erasure, as stored (by tenant)."""
    found: list[dict[str, object]] = []
    cursor = None
    while True:
        page = c.adapters.records.scan(["audit#"], cursor=cursor)
        found += [
            i.data
            for i in page.items
            if i.data.get("action") == "erasure" and i.data.get("target") == erasure_id
        ]
        if page.cursor is None:
            return found
        cursor = page.cursor


def stopped_after_the_first_document(c: Container, monkeypatch: pytest.MonkeyPatch) -> str:
    """Three notes of the agent, and an erasure of them killed after the first: its id."""
    brain = c.brains.create("Shore", slug="shore")
    for n in range(3):
        c.documents.write(brain, f"memory/agent/{AGENT}/{n}.md", f"Note {n} of the agent.".encode())
    with monkeypatch.context() as patched:
        patched.setattr(c.erasure, "_count_stopped", lambda *_: None)  # killed: nothing more runs
        with faults.armed("erasure.documents", at=1), pytest.raises(faults.InjectedFault):
            c.erasure.erase("agent_scope", AGENT, [brain.slug])
    (running,) = list(c.erasure.erasures.running())
    return running.receipt.id


def test_two_resumes_that_both_finish_the_erasure_audit_it_once(
    two: tuple[Container, Container],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """B finishes the erasure while A's resume is inside it; A then finishes it too. The audit
    shows the erasure once (it showed it twice), with the counts B's finish read."""
    a, b = two
    with access.as_system():
        erasure_id = stopped_after_the_first_document(a, monkeypatch)
        answers = []
        with faults.armed("documents.bytes_erased", at=1, action=lambda: answers.extend(b.erasure.resume())):
            a.erasure.resume()
        final = a.erasure.receipt(erasure_id)
    (entry,) = erasure_entries(a, erasure_id)
    (first,) = answers
    assert entry["detail"] == {"kind": "agent_scope", **{k: v for k, v in first.removed.items() if v}}
    assert all(first.removed[k] <= final.removed[k] for k in final.removed)  # never more than went


@pytest.mark.parametrize("after", [False, True], ids=["before_it_lands", "after_it_lands"])
def test_an_erasure_killed_at_its_audit_entry_is_audited_once_by_its_resume(
    two: tuple[Container, Container],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    after: bool,
) -> None:
    """Killed as it writes its `erasure` entry (before or after the entry lands): it was marked
    finished before, so no resume came back to it and the audit never showed it. The entry now
    comes before the finish, and is recorded once: the resume writes it, or finds it written."""
    a, b = two
    with access.as_system():
        brain = a.brains.create("Shore", slug="shore")
        a.documents.write(brain, f"memory/agent/{AGENT}/0.md", b"Note of the agent.")
        record = a.erasure.audit.record

        def killed(*args: object, **kwargs: object) -> object:
            if args[1] == "erasure" and after:
                record(*args, **kwargs)  # type: ignore[arg-type]
            if args[1] == "erasure":
                raise Killed
            return record(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(a.erasure.audit, "record", killed)
        with pytest.raises(Killed):
            a.erasure.erase("agent_scope", AGENT, [brain.slug])
        erasure_id = a.erasure.erasures.newest(1)[0].id
        (resumed,) = b.erasure.resume()
    assert resumed.status == "completed" and resumed.removed["documents"] == 1
    assert len(erasure_entries(b, erasure_id)) == 1


@pytest.mark.parametrize("reader", ["get", "resume", "list"])
def test_an_attempt_killed_before_its_advance_once_another_finished_has_its_counts_folded_in(
    two: tuple[Container, Container],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    reader: str,
) -> None:
    """A's resume loses the second document to B, which finishes the erasure; A counts the bytes it
    removed, saves them, and is killed before its advance: its progress record stayed apart from
    the receipt for good (blobs 2 of 3). GET, the list of receipts and the next resume fold it in."""
    a, b = two
    with access.as_system():
        erasure_id = stopped_after_the_first_document(a, monkeypatch)

        def saved_then_killed(erasure_id: str, brain_id: str, progress: Progress) -> None:
            progress.save()
            raise Killed

        monkeypatch.setattr(a.erasure.erasures, "advance", saved_then_killed)
        with faults.armed("documents.bytes_erased", at=1, action=b.erasure.resume), pytest.raises(Killed):
            a.erasure.resume()
        if reader == "get":
            receipt = b.erasure.receipt(erasure_id)
        elif reader == "list":
            (receipt,) = b.erasure.recent()
        else:
            assert b.erasure.resume() == []  # nothing running: it folds what was left
            receipt = b.erasure.erasures.get(erasure_id).receipt
    assert receipt.status == "completed"
    assert (receipt.removed["documents"], receipt.removed["chunks"], receipt.removed["blobs"]) == (3, 3, 3)
    assert b.adapters.records.query("erasure-progress", "").items == []
    assert b.erasure.receipt(erasure_id) == receipt
