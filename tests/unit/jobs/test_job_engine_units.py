"""Pure pieces of the job engine: error text, JSON checks, names, construction limits."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.adapters.local.job_engine import JobEngine
from cairn.adapters.local.job_outcomes import MAX_ERROR_CHARS, error_text
from cairn.adapters.local.job_rows import check_name, json_object, plain_json
from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Job
from cairn.ports.jobs import JobContext
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobRunner, MemoryJobStore


def test_error_text_is_one_line_without_traceback() -> None:
    assert (
        error_text(ValueError("first line\nTraceback (most recent call last):")) == "ValueError: first line"
    )


def test_error_text_shows_a_cairn_error_by_its_message() -> None:
    assert error_text(NotFound("document doc_1 not found")) == "document doc_1 not found"


def test_error_text_of_an_empty_message_is_the_type_name() -> None:
    assert error_text(RuntimeError()) == "RuntimeError"
    assert error_text(RuntimeError("   ")) == "RuntimeError"


def test_error_text_names_no_credential_the_error_quoted() -> None:
    failed = ConnectionError('Could not connect to the endpoint URL: "http://aws:EndpointPw77@10.0.0.1/"')
    assert error_text(failed) == (
        'ConnectionError: Could not connect to the endpoint URL: "http://[CREDENTIALS_REDACTED]@10.0.0.1/"'
    )


def test_error_text_is_truncated() -> None:
    assert len(error_text(ValueError("x" * 10_000))) == MAX_ERROR_CHARS


def test_plain_json_copies_deeply() -> None:
    original: dict[str, Any] = {"a": [1, {"b": 2}]}
    copied = plain_json(original, "value")
    copied["a"][1]["b"] = 3
    assert original == {"a": [1, {"b": 2}]}


@pytest.mark.parametrize("value", [{"x": object()}, {"x": float("inf")}, {"x": b"bytes"}])
def test_values_that_json_cannot_round_trip_are_rejected(value: Any) -> None:
    with pytest.raises(InvalidInput):
        json_object(value, "payload")


@pytest.mark.parametrize("name", ["", "x" * 201, None, 3])
def test_names_must_be_short_non_empty_strings(name: Any) -> None:
    with pytest.raises(InvalidInput):
        check_name("job kind", name)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lease_s": 0},
        {"max_attempts": 0},
        {"poll_s": -1},
        {"workers": 0},
        {"max_handed_over_s": 0},
        {"close_wait_s": -1},
    ],
)
def test_engine_rejects_nonsense_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        JobEngine(MemoryJobStore(), FakeClock(), **kwargs)  # type: ignore[arg-type]


def test_bad_idempotency_key_and_kind_are_rejected_before_queueing() -> None:
    runner = MemoryJobRunner()
    with pytest.raises(InvalidInput):
        runner.start("k", {}, idempotency_key="")
    with pytest.raises(InvalidInput):
        runner.start("", {})
    assert runner.store.rows == {}


def test_a_non_finite_progress_report_fails_the_attempt() -> None:
    runner = MemoryJobRunner(max_attempts=1)

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.progress(float("nan"))
        return {}

    runner.register("nan", handle)
    job = runner.start("nan", {})
    runner.run_pending()
    assert runner.status(job.id).error == "progress must be a number"


def test_a_checkpoint_value_must_be_json() -> None:
    runner = MemoryJobRunner(max_attempts=1)

    def handle(job: Job, ctx: JobContext) -> dict[str, Any]:
        ctx.checkpoint("step", {1, 2})
        return {}

    runner.register("ck", handle)
    job = runner.start("ck", {})
    runner.run_pending()
    failed = runner.status(job.id)
    assert failed.error is not None and "checkpoint 'step' is not plain JSON" in failed.error
