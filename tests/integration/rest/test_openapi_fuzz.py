"""Schemathesis over every REST operation of a live server on 127.0.0.1, built as `cairn serve`
builds it (the embedded SQLite + ONNX container, open on loopback): no 5xx, and no status, content
type, header or body that /openapi.json does not declare.

Examples are bounded (MAX_EXAMPLES per operation, fixed seeds) to keep the run near a minute on
two cores. Generated ids rarely name anything, so half the examples are pointed at a brain,
document, session, job and key that exist. test_openapi_fuzz_guarded.py fuzzes the same document
on a server that asks for credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import strategies as st

from cairn.bootstrap import Container
from cairn.entrypoints.http import create_app
from tests.integration.rest.live import serve
from tests.integration.rest.openapi_fuzzing import CHECKS, DOCUMENT, OPERATIONS, embedded
from tests.integration.rest.openapi_fuzzing import schema as fuzzed_schema
from tests.support.fuzzing import fixed

MAX_EXAMPLES = 150
DOC = "memory/global/kept.md"
requests_made = 0


def _seed(container: Container) -> dict[str, str]:
    """A brain with a document and an open session, a queued job and an API key to aim at."""
    brain = container.brains.create("Notes", slug="notes")
    container.documents.write(brain, DOC, b"# Kept\nThe kettle is in the second cupboard.")
    session = container.sessions.create(brain, title="chat")
    job = container.consolidation.queue(brain)
    key = container.keys.create(name="fuzz", tenant="local", scopes=["documents:read"], brains=None)
    return {
        "brainId": brain.slug,
        "sessionId": session.id,
        "jobId": job.id,
        "keyId": key.key.id,
    }


KNOWN: dict[str, str] = {}
"""Filled by the live server fixture before any example is generated."""


@pytest.fixture(scope="module")
def live_base(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[str]:
    global requests_made
    with embedded(Path(tmp_path_factory.mktemp("fuzz"))) as container:
        KNOWN.update(_seed(container))
        requests_made = 0
        with serve(create_app(container)) as base:
            served = httpx.get(f"{base}/openapi.json", timeout=30).json()
            assert served == DOCUMENT, "the fuzzed document is not the one the server serves"
            yield base
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\nschemathesis: {requests_made} requests over {len(OPERATIONS)} operations")
    assert requests_made > 10 * len(OPERATIONS), "the fuzz made too few requests to mean anything"


schema = fuzzed_schema()


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> Any:
    if not path_parameters or context.operation.method.upper() == "PATCH":
        return st.just(path_parameters)  # handing the brain to another owner would end the run
    aimed = {name: KNOWN.get(name, value) for name, value in path_parameters.items()}
    return st.sampled_from([path_parameters, aimed])


@schema.hook
def flatmap_query(context: Any, query: dict[str, Any] | None) -> Any:
    if not query or "path" not in query:
        return st.just(query)
    return st.sampled_from([query, {**query, "path": DOC}])


@schema.parametrize()
@fixed(MAX_EXAMPLES)
def test_every_operation_answers_as_documented(case: Any, live_base: str) -> None:
    global requests_made
    requests_made += 1
    case.call_and_validate(base_url=live_base, checks=CHECKS, timeout=30)
