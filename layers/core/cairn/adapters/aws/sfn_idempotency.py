"""Powertools idempotency for the state machines' step tasks.

A step's side effects are already idempotent (deterministic ids, checkpoints), but a step whose
Lambda response is lost (a service error after it ran) would be redone by the state machine's
retry. With the record table configured, each `step` event is keyed on (job, attempt, step, item):
a repeat of a step that completed returns the stored result without running it again; a step
that failed leaves no record, so its retry runs. Records sit in their own partition of the
single table and expire through its TTL attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Task = Callable[[dict[str, Any], Any], dict[str, Any]]

IDEMPOTENCY_PARTITION = "idempotency#steps"
STEP_KEY = "[job_id, attempt, step, item]"


def idempotent_steps(task: Task, table: str, client: Any = None, *, expires_after_s: int = 86_400) -> Task:
    """`task` with its `step` events made idempotent by Powertools on `table` (pk/sk keys)."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    persistence = DynamoDBPersistenceLayer(
        table_name=table,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value=IDEMPOTENCY_PARTITION,
        expiry_attr="expires_at",
        boto3_client=client,
    )
    config = IdempotencyConfig(
        event_key_jmespath=STEP_KEY, expires_after_seconds=expires_after_s, raise_on_no_idempotency_key=True
    )

    @idempotent_function(data_keyword_argument="event", persistence_store=persistence, config=config)
    def run_step(event: dict[str, Any]) -> dict[str, Any]:
        return task(event, None)

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not isinstance(event, dict) or event.get("action") != "step":
            return task(event, context)  # which refuses an event that is not a task's
        if context is not None and hasattr(context, "get_remaining_time_in_millis"):
            config.register_lambda_context(context)
        return run_step(event=event)

    return handle
