"""S3 on moto's HTTP server on 127.0.0.1: a presigned POST is a plain HTTP request that moto's
in-process `mock_aws` (it patches botocore) would never see."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

from cairn.adapters.aws.s3_blobs import S3BlobStore
from tests.contract.aws_storage import REGION, S3_CONFIG, fake_credentials

UPLOAD_BUCKET = "cairn-test-uploads"


@contextmanager
def s3_over_http(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3BlobStore]:
    """A blob store on a bucket of a moto server started (and stopped) here, on a free port."""
    fake_credentials(monkeypatch)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        client = boto3.client("s3", region_name=REGION, endpoint_url=endpoint, config=S3_CONFIG)
        client.create_bucket(Bucket=UPLOAD_BUCKET)
        yield S3BlobStore(client, UPLOAD_BUCKET)
    finally:
        httpx.post(f"{endpoint}/moto-api/reset")  # moto's state is process-wide
        server.stop()


def post_upload(url: str, fields: dict[str, str], data: bytes, name: str = "file.md") -> httpx.Response:
    """What a client does with a presigned POST: the fields, then the file last."""
    return httpx.post(url, data=fields, files={"file": (name, data)}, timeout=60)
