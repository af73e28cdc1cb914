"""zengram's last consolidation run per brain (services/zengram/runs.py) on every record store:
recorded only in place of the run that was read, so of two concurrent starts one wins."""

from __future__ import annotations

import pytest

from cairn.domain.errors import Conflict
from cairn.ports.records import RecordStore
from cairn.services.zengram.runs import ConsolidationRuns


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
