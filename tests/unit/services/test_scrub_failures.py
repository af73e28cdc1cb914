"""An erasure's scrub of the stores' files that fails: tried again only while the failure passes (a
lock, a race); a failure that another try at once cannot fix (a bug, a refusal of the request) stops
the erasure at once with its reason on the receipt, and a resume after the fix finishes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth import access
from cairn.domain.errors import CairnError, Conflict, InvalidInput, Unavailable
from cairn.services.erasure import service
from cairn.services.erasure.service import ErasureService, ScrubFailed
from tests.fakes.container import fake_container


def erasure_with_memory(tmp_path: Path) -> ErasureService:
    container = fake_container(tmp_path)
    with access.as_system():
        brain = container.brains.create("Team", slug="team")
        container.ingest.remember(brain, "# Tea\n\nScout likes tea.", path="memory/agent/scout/tea.md")
    return container.erasure


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("a bug in the scrub\nwith a second line"), InvalidInput("the store refused the request")],
    ids=["bug", "refusal"],
)
def test_a_scrub_failing_for_good_stops_at_once_says_why_and_resumes_after_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    erasure = erasure_with_memory(tmp_path)
    scrubs: list[list[str]] = []
    waits: list[float] = []
    monkeypatch.setattr(service.time, "sleep", waits.append)

    def failing(brain_ids: list[str]) -> None:
        scrubs.append(brain_ids)
        raise failure

    with access.as_system():
        monkeypatch.setattr(erasure, "_scrub_once", failing)
        with pytest.raises(ScrubFailed) as raised:
            erasure.erase("agent_scope", "scout")
        assert len(scrubs) == 1 and waits == []  # not tried again: it would fail the same way
        (pending,) = erasure.erasures.running()
        stalled = pending.receipt.stalled
        assert stalled == raised.value.message
        if isinstance(failure, InvalidInput):  # the store's refusal, said as it is
            assert failure.message in stalled
        else:  # a bug: named by its kind; what it says may name internals, for the log only
            assert "RuntimeError" in stalled and "a bug in the scrub" not in stalled
        assert erasure.resume() == [] and len(scrubs) == 2  # still failing: said in the log, not raised

        monkeypatch.setattr(erasure, "_scrub_once", lambda brain_ids: None)  # fixed
        (finished,) = erasure.resume()
    assert finished.id == pending.receipt.id
    assert finished.status == "completed" and finished.stalled is None and finished.removed["documents"] == 1


@pytest.mark.parametrize(
    "failure",
    [
        Unavailable("the record store is locked by another process"),
        Conflict("a concurrent write"),
        CairnError("the record store is busy: its write-ahead log could not be emptied"),
    ],
    ids=["unavailable", "conflict", "busy"],
)
def test_a_scrub_failing_for_a_while_is_tried_again_and_says_how_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: CairnError
) -> None:
    erasure = erasure_with_memory(tmp_path)
    scrubs: list[list[str]] = []
    waits: list[float] = []
    monkeypatch.setattr(service.time, "sleep", waits.append)

    def busy(brain_ids: list[str]) -> None:
        scrubs.append(brain_ids)
        raise failure

    with access.as_system():
        monkeypatch.setattr(erasure, "_scrub_once", busy)
        with pytest.raises(Unavailable, match="GET /v1/erasures/"):
            erasure.erase("agent_scope", "scout")
        assert len(scrubs) == service.SCRUB_TRIES and waits == sorted(waits) and len(waits) == len(scrubs)
        (pending,) = erasure.erasures.running()
        assert pending.receipt.stalled is None  # nothing for the operator to do: asking again finishes it
