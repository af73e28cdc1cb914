"""zengram's last consolidation run per brain (services/zengram/runs.py) on every record store:
recorded only in place of the run that was read, so of two concurrent starts one wins; each run's
record keeps what it took on, found by its job."""

from __future__ import annotations

import pytest

from cairn.domain.errors import Conflict
from cairn.ports.records import RecordStore
from cairn.services.zengram.runs import ConsolidationRuns, Taken


def test_a_run_replaces_only_the_run_that_was_read(records: RecordStore) -> None:
    runs = ConsolidationRuns(records)
    assert runs.last("brn_1") is None

    runs.begin("brn_1", "job_1", "2026-05-01T09:00:00.000Z", after=None)
    first = runs.last("brn_1")
    assert first is not None and first.job_id == "job_1" and first.started_at == "2026-05-01T09:00:00.000Z"
    with pytest.raises(Conflict):  # a second start that also read "no run yet" loses
        runs.begin("brn_1", "job_2", "2026-05-01T09:00:01.000Z", after=None)

    runs.begin("brn_1", "job_3", "2026-05-01T10:00:00.000Z", after=first)
    second = runs.last("brn_1")
    assert second is not None and second.job_id == "job_3" and second.version > first.version
    with pytest.raises(Conflict):  # a start that read the first run, after the second was recorded
        runs.begin("brn_1", "job_4", None, after=first)
    assert runs.last("brn_2") is None  # per brain


def test_a_run_keeps_what_it_took_on_and_each_job_is_found_by_its_id(records: RecordStore) -> None:
    runs = ConsolidationRuns(records)
    first = Taken(waiting=50, groups=2, settled=None, cutoff="2026-05-01T08:59:00.000Z")
    runs.begin("brn_1", "job_1", "2026-05-01T09:00:00.000Z", after=None, taken=first)
    second = Taken(waiting=1, groups=1, settled=first.cutoff, cutoff="2026-05-01T09:30:00.000Z")
    runs.begin("brn_1", "job_2", "2026-05-01T10:00:00.000Z", after=runs.last("brn_1"), taken=second)

    last = runs.last("brn_1")
    assert last is not None and last.job_id == "job_2" and last.taken == second
    assert runs.of_job("brn_1", "job_1") == first and runs.of_job("brn_1", "job_2") == second
    assert runs.of_job("brn_1", "job_9") is None and runs.of_job("brn_2", "job_1") is None
