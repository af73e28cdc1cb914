"""The DynamoDB and S3 requests an erasure sends a document erased (DynamoDB records and S3 blobs
under moto, counted with botocore event hooks as bench/erasure_200.py counts them): what it
already holds is not read again, and what a document has none of is not deleted blindly."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.auth import access
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from tests.contract.aws_storage import (
    BUCKET,
    DYNAMODB_CONFIG,
    S3_CONFIG,
    TABLE,
    client,
    create_bucket,
    create_table,
    mocked_aws,
)
from tests.fakes.container import fake_adapters

pytestmark = pytest.mark.integration
ERASED = 4


@pytest.fixture
def c(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with mocked_aws(request):
        dynamodb, s3 = client("dynamodb", DYNAMODB_CONFIG), client("s3", S3_CONFIG)
        create_table(dynamodb, TABLE)
        create_bucket(s3, BUCKET)
        adapters = replace(
            fake_adapters(),
            records=DynamoRecordStore(dynamodb, TABLE),
            blobs=S3BlobStore(s3, BUCKET, prefix="blobs"),
        )
        yield build_container(Settings(data_dir=tmp_path / "data"), adapters)


def _sent(c: Container) -> collections.Counter[str]:
    """ "<operation> <partition kind>" (the partition key up to its first '#') of every request."""
    sent: collections.Counter[str] = collections.Counter()

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        if "Key" in params and isinstance(params["Key"].get("pk"), dict):
            pk = str(params["Key"]["pk"]["S"])
        elif "ExpressionAttributeValues" in params and ":pk" in params["ExpressionAttributeValues"]:
            pk = str(params["ExpressionAttributeValues"][":pk"]["S"])
        else:
            pk = ""
        sent[f"{model.name} {pk.split('#', 1)[0]}".strip()] += 1

    c.adapters.records.client.meta.events.register("provide-client-params", count)  # type: ignore[attr-defined]
    c.adapters.blobs.client.meta.events.register("provide-client-params", count)  # type: ignore[attr-defined]
    return sent


def _erased_ada(c: Container) -> collections.Counter[str]:
    """The requests an erasure of agent `ada`'s ERASED notes sent (`bo` has as many, kept)."""
    with access.as_system():
        brain = c.brains.create("Shore", slug="shore")
        for n in range(ERASED):
            for agent in ("ada", "bo"):
                c.documents.write(
                    brain, f"memory/agent/{agent}/{n}.md", f"# {agent} {n}\n\nNote {n}.".encode()
                )
        sent = _sent(c)
        receipt = c.erasure.erase("agent_scope", "ada", [brain.slug])
    assert receipt.removed["documents"] == ERASED
    return sent


def test_an_erasure_reads_each_document_s_raw_rows_once_and_deletes_only_what_is_held(c: Container) -> None:
    sent = _erased_ada(c)
    # one listing of the raw rows a document (their keys and their deletion), one of its folder
    assert sent["Query raw"] == ERASED
    assert sent["ListObjectVersions"] == 2 * ERASED and sent["ListObjectsV2"] == 0
    # none of them had a read count, a model's claims or a pending ingest: nothing deleted there
    assert sent["DeleteItem access"] == sent["DeleteItem assertions"] == sent["DeleteItem pending"] == 0


def test_an_erasure_reads_each_document_s_concept_reach_and_mentions_once_before_its_commit(
    c: Container,
) -> None:
    """The doomed documents' concept reach is read at once (a BatchGetItem), and a document's
    mention links with its other outgoing links: the reads left are the removal hook's of the reach,
    after the commit, and six link partitions a document (its links and numbered links out and in,
    its one chunk's out and in) besides the mentions read again after the commit."""
    sent = _erased_ada(c)
    assert sent["GetItem links"] == ERASED
    assert sent["Query links"] == (6 + 1) * ERASED
