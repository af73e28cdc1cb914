"""S3BlobStore as the UploadSigner: a presigned POST really stores the bytes (over HTTP, on
moto's server), and its signed policy pins the key, the size range and the expiry.

moto stores a POST without checking its policy, so the size and key limits are asserted on the
policy S3 itself enforces; the ingest-by-key tests check the size again with a HEAD."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.domain.errors import InvalidInput
from tests.integration.aws.moto_http import UPLOAD_BUCKET, post_upload, s3_over_http

MiB = 1024 * 1024


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3BlobStore]:
    with s3_over_http(monkeypatch) as blobs:
        yield blobs


def _policy(fields: dict[str, str]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(base64.b64decode(fields["policy"]))
    return decoded


def test_a_presigned_post_stores_the_file_under_the_key(store: S3BlobStore) -> None:
    key = "uploads/brn_1/upl_1/report.md"
    post = store.presign_upload(key, max_bytes=25 * MiB, content_type=None, expires_in=900)
    data = b"# report\n" + b"x" * (7 * MiB)
    response = post_upload(post.url, post.fields, data)
    assert response.status_code == 204, response.text
    assert store.get(key) == data
    assert store.size(key) == len(data)
    assert store.size("uploads/brn_1/upl_1/other.md") is None


def test_the_policy_limits_size_key_and_time(store: S3BlobStore) -> None:
    before = datetime.now(UTC)
    post = store.presign_upload(
        "uploads/b/upl_2/a.pdf", max_bytes=25 * MiB, content_type=None, expires_in=900
    )
    policy = _policy(post.fields)
    assert ["content-length-range", 1, 25 * MiB] in policy["conditions"]
    assert {"key": "uploads/b/upl_2/a.pdf"} in policy["conditions"]
    assert {"bucket": UPLOAD_BUCKET} in policy["conditions"]
    expiry = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    assert before + timedelta(minutes=14) < expiry <= datetime.now(UTC) + timedelta(minutes=15)
    assert abs((post.expires_at - expiry).total_seconds()) < 5
    assert post.fields["key"] == "uploads/b/upl_2/a.pdf"


def test_a_content_type_is_pinned_when_given(store: S3BlobStore) -> None:
    post = store.presign_upload("u/upl_3/a.pdf", max_bytes=10, content_type="application/pdf", expires_in=60)
    assert post.fields["Content-Type"] == "application/pdf"
    assert {"Content-Type": "application/pdf"} in _policy(post.fields)["conditions"]


def test_keys_follow_the_blob_rules_and_the_prefix(store: S3BlobStore) -> None:
    with pytest.raises(InvalidInput):
        store.presign_upload("uploads/../x", max_bytes=10, content_type=None, expires_in=60)
    with pytest.raises(InvalidInput):
        store.size("/abs")
    prefixed = S3BlobStore(store.client, UPLOAD_BUCKET, "blobs/")
    post = prefixed.presign_upload("uploads/b/upl_4/n.md", max_bytes=10, content_type=None, expires_in=60)
    assert post.fields["key"] == "blobs/uploads/b/upl_4/n.md"
    assert post_upload(post.url, post.fields, b"hello").status_code == 204
    assert prefixed.size("uploads/b/upl_4/n.md") == 5
    assert store.size("uploads/b/upl_4/n.md") is None


def test_an_s3_url_names_a_key_only_in_this_bucket_and_below_the_prefix(store: S3BlobStore) -> None:
    assert store.key_of(f"s3://{UPLOAD_BUCKET}/uploads/b/upl_5/a.md") == "uploads/b/upl_5/a.md"
    assert store.key_of("s3://another-bucket/uploads/b/upl_5/a.md") is None
    assert store.key_of(f"https://{UPLOAD_BUCKET}.s3.amazonaws.com/uploads/b/upl_5/a.md") is None
    assert store.key_of(f"s3://{UPLOAD_BUCKET}") is None
    prefixed = S3BlobStore(store.client, UPLOAD_BUCKET, "blobs/")
    assert prefixed.key_of(f"s3://{UPLOAD_BUCKET}/blobs/uploads/b/upl_5/a.md") == "uploads/b/upl_5/a.md"
    assert prefixed.key_of(f"s3://{UPLOAD_BUCKET}/uploads/b/upl_5/a.md") is None
