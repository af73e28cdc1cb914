"""POST /v1/archive/import: a part of a brain's archive (services/archive/), restored on the server.

The body is JSON Lines as `cairn export` writes them: the archive's header, then records. A whole
archive rarely fits one request (a Lambda request carries 6 MB), so `cairn import --server` sends
the header again with each part; a restore is idempotent record by record, so a part sent twice
changes nothing and an interrupted import resumes by sending the rest. The answer is the part's
report: the brain, whether this part created it, what it wrote and left alone per record kind, and
the records the brain refused, the documents and raw rows it kept because it changed them after
the archive was made, and those the part holds twice (`duplicates`: only the first is restored),
their lines counted within the part. The archive's `end` record
counts the whole archive, not a part, so whether the archive is whole is the sender's check
(`cairn import --server` makes it before it sends anything).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from cairn.container import Container
from cairn.domain import json_input
from cairn.domain.errors import InvalidInput
from cairn.entrypoints.counted_calls import step
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.body import read_capped
from cairn.entrypoints.rest.problems import UnsupportedMediaType

ARCHIVE_IMPORT = "/v1/archive/import"
ARCHIVE_PART_BYTES = 4 * 1024 * 1024
"""The largest part accepted: under Lambda's 6 MB request limit with room for the envelope."""
NDJSON = ("application/x-ndjson", "application/jsonl", "application/json-lines", "text/plain")


class ImportedBrain(BaseModel):
    id: str
    slug: str


class ImportPartResult(BaseModel):
    brain: ImportedBrain
    created_brain: bool
    written: dict[str, int]
    unchanged: dict[str, int]
    errors: list[str]
    kept: list[str]
    """Documents and raw rows the brain changed after the archive was made: left as they are."""
    duplicates: list[str] = []
    """Documents and raw rows an earlier line of the part holds too (`line N: path, as line M`):
    only the first is restored."""


def archive_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/archive", tags=["archive"], route_class=ScopedRoute)

    @router.post(
        "/import",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    async def import_part(
        request: Request,
        brain: str | None = Query(default=None, description="the brain to restore into (id or slug)"),
    ) -> ImportPartResult:
        """Restore one part of an archive (its header line first); creating the brain needs
        brains:admin."""
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media and media not in NDJSON:
            raise UnsupportedMediaType(f"send the archive part as application/x-ndjson, not {media}")
        body = await read_capped(request, ARCHIVE_PART_BYTES, what="archive part")
        records = _records(body)
        report = await step(lambda: container.archive.import_(brain, records, part=True))
        return ImportPartResult(
            brain=ImportedBrain(id=report.brain.id, slug=report.brain.slug),
            created_brain=report.created_brain,
            written=dict(report.written),
            unchanged=dict(report.unchanged),
            errors=list(report.errors),
            kept=list(report.kept),
            duplicates=list(report.duplicates),
        )

    return router


def _records(body: bytes) -> list[dict[str, Any]]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the archive part is not UTF-8 (byte {exc.start})") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        value = json_input.loads(line, what=f"line {number}")
        if not isinstance(value, dict):
            raise InvalidInput(f"line {number}: a record is a JSON object")
        records.append(value)
    return records
