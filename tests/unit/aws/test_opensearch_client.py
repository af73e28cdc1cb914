"""Building the client (SigV4 or not) and mapping OpenSearch failures onto Cairn's errors."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from opensearchpy import (
    AuthorizationException,
    AWSV4SignerAuth,
    ConflictError,
    ConnectionError,
    NotFoundError,
    RequestError,
    TransportError,
)

from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex, opensearch_client
from cairn.adapters.aws.opensearch_errors import error_type, failed_items, translate
from cairn.domain.errors import CairnError, Conflict, InvalidInput
from tests.contract.aws_storage import fake_credentials
from tests.contract.test_chunk_index_contract import DIM, axis
from tests.unit.aws.test_opensearch_fake import FakeCluster, fake_client
from tests.unit.aws.test_opensearch_requests import query, ready


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_credentials(monkeypatch)


def connection(client: Any) -> Any:
    return client.transport.connection_pool.connection


def test_sigv4_client_signs_requests_for_the_region_and_service(aws_env: None) -> None:
    client = opensearch_client("https://search-cairn.eu-west-1.es.amazonaws.com", "eu-west-1")
    conn = connection(client)
    assert (conn.host, conn.use_ssl) == ("https://search-cairn.eu-west-1.es.amazonaws.com:443", True)
    auth = conn.session.auth
    assert isinstance(auth, AWSV4SignerAuth)
    request = requests.Request("GET", "https://search-cairn.eu-west-1.es.amazonaws.com/_count").prepare()
    signed = auth(request)
    assert signed.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/eu-west-1/es/aws4_request" in signed.headers["Authorization"]
    assert signed.headers["X-Amz-Security-Token"] == "testing"


def test_serverless_collections_sign_as_aoss(aws_env: None) -> None:
    client = opensearch_client("https://abc.us-east-1.aoss.amazonaws.com", "us-east-1", service="aoss")
    signed = connection(client).session.auth(requests.Request("GET", "https://abc/x").prepare())
    assert "/us-east-1/aoss/aws4_request" in signed.headers["Authorization"]


def test_unsigned_client_takes_port_prefix_and_basic_auth_from_the_url() -> None:
    client = opensearch_client("http://admin:s%40cret@localhost:9200/proxy/", "us-east-1", auth="none")
    conn = connection(client)
    assert conn.host == "http://localhost:9200"
    assert conn.url_prefix == "/proxy"
    assert conn.session.auth == ("admin", "s@cret")
    bare = connection(opensearch_client("http://localhost:9200", "us-east-1", auth="none"))
    assert bare.session.auth is None


@pytest.mark.parametrize("url", ["localhost:9200", "ftp://host", "https://"])
def test_a_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        opensearch_client(url, "us-east-1", auth="none")


ERROR_BODY = {
    "error": {
        "root_cause": [
            {"type": "illegal_argument_exception", "reason": "field [embedding] dimension mismatch"}
        ],
        "type": "search_phase_execution_exception",
        "reason": "all shards failed",
    },
    "status": 400,
}


@pytest.mark.parametrize(
    ("exc", "kind", "words"),
    [
        (
            RequestError(400, "search_phase_execution_exception", ERROR_BODY),
            InvalidInput,
            "dimension mismatch",
        ),
        (ConflictError(409, "version_conflict_engine_exception", {}), Conflict, "conflicted"),
        (AuthorizationException(403, "security_exception", {}), CairnError, "status 403"),
        (TransportError(500, "internal_server_error", {}), CairnError, "status 500"),
        (
            ConnectionError("N/A", "https://user:pw@host failed", Exception()),
            CairnError,
            "could not be reached",
        ),
    ],
)
def test_failures_map_onto_domain_errors_without_urls_or_bodies(
    exc: Exception, kind: type[CairnError], words: str
) -> None:
    error = translate(exc, "search")
    assert type(error) is kind
    assert words in error.message
    assert "pw" not in error.message and "host" not in error.message


def test_error_type_reads_the_type_from_the_body_or_the_bare_error() -> None:
    assert error_type(RequestError(400, "x", {"error": {"type": "resource_already_exists_exception"}})) == (
        "resource_already_exists_exception"
    )
    assert error_type(RequestError(400, "resource_already_exists_exception", "raw")) == (
        "resource_already_exists_exception"
    )
    assert error_type(NotFoundError(404, "<html>not found</html>", "<html>")) == ""


def test_failed_bulk_items_name_the_chunk_and_the_reason() -> None:
    response = {
        "errors": True,
        "items": [
            {"index": {"_id": "a", "status": 201}},
            {
                "index": {
                    "_id": "b",
                    "status": 400,
                    "error": {"type": "mapper_parsing_exception", "reason": "bad"},
                }
            },
        ],
    }
    assert failed_items(response) == ["b: mapper_parsing_exception: bad"]
    assert failed_items({"errors": False, "items": []}) == []


def test_a_failing_search_leg_raises_a_domain_error() -> None:
    class Failing(FakeCluster):
        def _msearch_one(self, header: Any, body: Any) -> Any:
            return {**ERROR_BODY, "status": 400}

    index: OpenSearchChunkIndex = ready(Failing(), fusion="client")
    with pytest.raises(InvalidInput, match="dimension mismatch"):
        index.search(query("heron", axis(0)))


def test_an_unreachable_cluster_is_a_cairn_error() -> None:
    class Down(FakeCluster):
        def handle(self, *args: Any) -> Any:
            raise ConnectionError("N/A", "connection refused", Exception())

    index = OpenSearchChunkIndex(fake_client(Down()), DIM)
    with pytest.raises(CairnError, match="could not be reached"):
        index.count("b1")
