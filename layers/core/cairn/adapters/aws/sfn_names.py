"""Deterministic names for the Step Functions JobRunner: job ids, execution names and ARNs.

An execution's name is a hash of the job's input (id, kind, payload) and of when its record was
made. Step Functions refuses a second execution with a name already used on the state machine
(ExecutionAlreadyExists, or the running execution itself when the input is identical), and a
repeated start of the same job, by a retry or by a concurrent request with the same idempotency
key, starts the name its record holds, so it never runs twice. The job id is part of the input:
without an idempotency key every start is a new job, even with an identical payload, as the
JobRunner port requires. The moment is too: a job an erasure forgot (ports/jobs.py ForgetsJobs)
and started again under its key, so under the same id, is a new execution, not the old one's name.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

MAX_EXECUTION_NAME = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def job_id_for_key(idempotency_key: str) -> str:
    """The job id a key always maps to (ids are shaped like `new_id("job")`: prefix + 26 chars)."""
    digest = hashlib.sha256(f"cairn-job-key:{idempotency_key}".encode()).hexdigest()
    return f"job_{digest[:26]}"


def execution_input(job_id: str, kind: str) -> str:
    """What the state machine receives; canonical, so a repeated StartExecution is byte-identical."""
    return canonical_json({"job_id": job_id, "kind": kind})


def execution_name(job_id: str, kind: str, payload: dict[str, Any], made: datetime) -> str:
    """`<kind>-<hash of the job input and of when its record was made>`: at most 80 characters
    of [A-Za-z0-9_-]."""
    digest = hashlib.sha256(
        canonical_json({"job_id": job_id, "kind": kind, "input": payload, "made": made.isoformat()}).encode()
    ).hexdigest()[:32]
    label = _UNSAFE.sub("-", kind).strip("-")[:40] or "job"
    return f"{label}-{digest}"


def execution_arn(state_machine_arn: str, name: str) -> str:
    """arn:<partition>:states:<region>:<account>:stateMachine:<sm> -> ...:execution:<sm>:<name>."""
    parts = state_machine_arn.split(":")
    if len(parts) < 7 or parts[5] != "stateMachine":
        raise ValueError(f"not a state machine ARN: {state_machine_arn!r}")
    return ":".join([*parts[:5], "execution", parts[6], name])
