"""Schemathesis over every REST operation of a live server that asks for credentials (the embedded
SQLite + ONNX container with a static token; test_openapi_fuzz_guarded_aws.py runs the same on the
AWS adapters), sent by callers who may do little: a key limited to one brain ("mine", read and
write), a read-only key of the tenant, no credential, and a credential that is no credential. Each
example goes out as one of them, aimed half the time at what exists: their brain, its session and
job by slug and by id, the tenant's admin key, and an archive of their brain to restore into it
(guarded_fuzzing.py).

Every answer passes the checks the open fuzz applies (no 5xx, only what /openapi.json declares),
and the caller's own: no credential or a bad one gets 401; a scope the caller lacks gets 403; the
limited key gets no success on their brain, nor its text in an answer, nor its id unless it sent
it; no answer carries a credential. When the run ends their brain, the brain list and the keys are
as seeded.

Its first run found two faults, both mended: a caller without a route's scope got 400 for a JSON
body FastAPI could not decode (it decodes before any dependency runs; rest/authz.py ScopedRoute
now checks first), and an archive import aimed at a brain id it may not see answered a 404 the
document did not declare.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.rest.guarded_fuzzing import SETTINGS, Guard
from tests.integration.rest.openapi_fuzzing import embedded
from tests.support.fuzzing import EXAMPLES, fixed

MAX_EXAMPLES = 4 * EXAMPLES  # 60 an operation; CAIRN_FUZZ_EXAMPLES for a longer hunt
GUARD = Guard()
schema = GUARD.schema


@pytest.fixture(scope="module")
def live_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = Path(tmp_path_factory.mktemp("guarded"))
    with embedded(tmp, **SETTINGS) as container, GUARD.running(container) as base:
        yield base


@schema.parametrize()
@fixed(MAX_EXAMPLES)
def test_every_operation_keeps_each_caller_to_its_credential(case: Any, live_base: str) -> None:
    GUARD.send(case, live_base)
