"""JobRunner: start background work and read its status. Adapters arrive with durable jobs."""

from __future__ import annotations

from typing import Any, Protocol

from cairn.domain.models import Job


class JobRunner(Protocol):
    def start(self, kind: str, payload: dict[str, Any], *, brain_id: str | None = None) -> Job: ...

    def status(self, job_id: str) -> Job: ...
