"""What the schemathesis runs share: the document the server serves (built before any server runs,
as collection needs it), the operations it holds but GET /events, the checks every answer passes,
and the embedded container, as `cairn serve` builds it.

GET /events is left out: its 200 is an endless SSE stream a fuzzer would wait on forever
(test_events.py covers it, and its 404 is the brain resolver every other route shares)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import schemathesis
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """An archive part (POST /v1/archive/import) as the generated value's text, or its JSON."""
    return value.encode("utf-8") if isinstance(value, str) else json.dumps(value).encode("utf-8")


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


def _document() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return create_app(fake_container(Path(tmp))).openapi()


DOCUMENT = _document()
OPERATIONS = [(m, p) for p, ops in DOCUMENT["paths"].items() for m in ops if not p.endswith("/events")]


def schema() -> Any:
    """A schema of its own for each test module: hooks registered on it stay in that module."""
    return schemathesis.openapi.from_dict(DOCUMENT).exclude(path_regex=r"/events$")


@contextmanager
def embedded(tmp: Path, **settings: Any) -> Iterator[Container]:
    """A container as `cairn serve` builds it (SQLite, files, the ONNX embedder) under `tmp`,
    its stores closed when the block ends."""
    container = build_container(Settings(data_dir=tmp, ingest_root=tmp / "ingest", **settings))
    try:
        yield container
    finally:
        for adapter in (container.adapters.records, container.adapters.chunks):
            close = getattr(adapter, "close", None)
            if close is not None:
                close()
