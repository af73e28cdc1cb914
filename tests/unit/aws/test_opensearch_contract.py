"""The ChunkIndex contract suite, unchanged, on OpenSearchChunkIndex over the fake cluster.

The suite's tests are imported as they are and its `make_index` fixture is replaced, so every
port test runs here against the adapter (the SQLite-only tests are left out), once with client
fusion, which passes all of them, and once with pipeline fusion, where the tests that assert
per-leg ranks are expected to fail (tests/contract/aws_opensearch.py says why).
What this proves is the adapter's own logic (request building, pagination, fusion, ranks, error
paths) against an emulation of OpenSearch; tests/contract/aws_opensearch.py runs the same suite on
a real cluster when OPENSEARCH_URL is set.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex
from cairn.ports.chunks import ChunkIndex
from tests.contract import test_chunk_index_contract as contract
from tests.contract.aws_opensearch import expect_rankless_failures
from tests.contract.test_chunk_index_contract import *  # noqa: F403  (the suite, collected here)
from tests.contract.test_chunk_query_language_contract import *  # noqa: F403  (its query language cases)
from tests.unit.aws.test_opensearch_fake import FakeCluster, fake_client

for _name in dir(contract):
    if _name.startswith("test_sqlite_") or _name == "test_match_expression_is_always_valid_fts5":
        globals().pop(_name, None)


@pytest.fixture(params=["client", "pipeline"])  # type: ignore[no-redef]  # replaces the suite's
def make_index(request: pytest.FixtureRequest) -> Iterator[contract.Factory]:
    if request.param == "pipeline":
        expect_rankless_failures(request)
    cluster = FakeCluster()  # one cluster per test: a second make() sees the first one's writes

    def make() -> ChunkIndex:
        return OpenSearchChunkIndex(fake_client(cluster), contract.DIM, fusion=request.param, refresh="true")

    yield make
