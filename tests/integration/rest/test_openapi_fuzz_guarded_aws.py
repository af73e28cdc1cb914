"""The guarded schemathesis run of test_openapi_fuzz_guarded.py on the AWS adapters (DynamoDB and S3
under moto, OpenSearch over the fake cluster; the fake embedder), where the same core rule decides
through other repositories: every REST operation, sent by a key limited to one brain, a read-only
key, no credential or a bad one, aimed half the time at the brain the limited key may not use.
The same examples and checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from tests.contract.aws_storage import fake_credentials, serialized_moto
from tests.integration.rest.guarded_fuzzing import SETTINGS, Guard
from tests.support.fuzzing import EXAMPLES, fixed
from tests.support.shapes import aws, process

MAX_EXAMPLES = 4 * EXAMPLES  # 60 an operation, as on the embedded store
GUARD = Guard()
schema = GUARD.schema


@pytest.fixture(scope="module")
def live_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = Path(tmp_path_factory.mktemp("guarded-aws"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake_credentials(monkeypatch)
        with mock_aws(), serialized_moto():
            container = process(aws(), tmp, ingest_root=tmp / "ingest", **SETTINGS)
            with GUARD.running(container) as base:
                yield base


@schema.parametrize()
@fixed(MAX_EXAMPLES)
def test_every_operation_keeps_each_caller_to_its_credential_on_aws(case: Any, live_base: str) -> None:
    GUARD.send(case, live_base)
