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
