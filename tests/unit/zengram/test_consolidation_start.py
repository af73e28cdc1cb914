"""Starting a zengram consolidation: the one request that records the run queues its job, and
brain_consolidate refuses an action it cannot do instead of starting a run
(services/zengram/consolidation.py, entrypoints/mcp/zengram/tools.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.mcp.kit import SurfaceDeps
from cairn.entrypoints.mcp.zengram import args as a
from cairn.entrypoints.mcp.zengram import tools
from cairn.entrypoints.mcp.zengram.services import zengram_services
from cairn.services.ingest.inputs import LocalFilePolicy
from cairn.services.zengram import consolidation
from cairn.services.zengram.deps import ZengramDeps
from tests.fakes.container import fake_container


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


@pytest.fixture
def brain(container: Container) -> Brain:
    return container.brains.create("Shared Brain", visibility="tenant")


def deps(container: Container) -> ZengramDeps:
    return container.zengram.c


def test_a_request_that_loses_the_race_queues_nothing(container: Container, brain: Brain) -> None:
    c = deps(container)
    begin = c.runs.begin
    answers: list[tuple[int, dict[str, Any]]] = []
    raced: list[bool] = []

    def another_request_first(*args: Any, **kwargs: Any) -> None:
        if not raced:  # a concurrent request that read the same last run records its own first
            raced.append(True)
            answers.append(consolidation.start(c, brain, sync=False))
        begin(*args, **kwargs)

    c.runs.begin = another_request_first  # type: ignore[method-assign]
    answers.append(consolidation.start(c, brain, sync=False))

    assert [status for status, _ in answers] == [202, 409]
    assert container.jobs.run_pending() == 1  # the winner's job, and only it


def test_each_run_after_the_last_finished_gets_its_own_job(container: Container, brain: Brain) -> None:
    c = deps(container)
    first = consolidation.start(c, brain, sync=False)[1]["job_id"]
    container.jobs.run_pending()
    second = consolidation.start(c, brain, sync=False)[1]["job_id"]

    assert second != first and container.jobs.run_pending() == 1


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"action": "job"}, 'Error: "job_id" is required for action "job"'),
        ({"action": "job", "job_id": ""}, 'Error: "job_id" is required for action "job"'),
        ({"action": "poll"}, 'Error: "action" must be one of: run, status, job'),
    ],
)
def test_an_action_it_cannot_do_is_refused_and_starts_nothing(
    container: Container, brain: Brain, given: dict[str, Any], error: str
) -> None:
    surface = SurfaceDeps(zengram_services(container), LocalFilePolicy(root=None, max_bytes=1))

    result = tools.consolidate(surface, a.ConsolidateArgs.model_validate(given))

    assert result.is_error and result.content[0].text == error  # type: ignore[union-attr]
    assert deps(container).runs.last(brain.id) is None and container.jobs.run_pending() == 0


def test_a_sync_run_no_worker_took_runs_its_own_job_and_no_other(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given another principal's long job queued ahead (no worker in this process)
    ran: list[str] = []
    container.jobs.register("long", lambda job, ctx: ran.append("long") or {})
    other = container.jobs.start("long", {}, principal="someone else")
    monkeypatch.setattr(consolidation, "PICKUP_S", 0.0)
    # When a synchronous consolidation waits for its job
    status, body = consolidation.start(deps(container), brain, sync=True)
    # Then it ran its own job in the request's thread, and left the other queued for a worker
    assert status == 200 and body["status"] == "complete"
    assert ran == [] and container.jobs.status(other.id).status.value == "queued"
