"""S3 on moto's HTTP server on 127.0.0.1: a presigned POST is a plain HTTP request that moto's
in-process `mock_aws` (it patches botocore) would never see."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import httpx
import pytest

from cairn.adapters.aws.s3_blobs import S3BlobStore
from tests.contract.aws_storage import REGION, S3_CONFIG
from tests.support.moto_server import moto_endpoint

UPLOAD_BUCKET = "cairn-test-uploads"


@contextmanager
def s3_over_http(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3BlobStore]:
    """A blob store on a bucket of a moto server started (and stopped) here, on a free port."""
    with moto_endpoint(monkeypatch) as endpoint:
        client = boto3.client("s3", region_name=REGION, endpoint_url=endpoint, config=S3_CONFIG)
        client.create_bucket(Bucket=UPLOAD_BUCKET)
        yield S3BlobStore(client, UPLOAD_BUCKET)


def post_upload(url: str, fields: dict[str, str], data: bytes, name: str = "file.md") -> httpx.Response:
    """What a client does with a presigned POST: the fields, then the file last."""
    return httpx.post(url, data=fields, files={"file": (name, data)}, timeout=60)
