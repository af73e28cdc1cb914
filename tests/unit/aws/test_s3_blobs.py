"""S3BlobStore specifics under moto: key prefix, bucket-default encryption, versioning, errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.domain.errors import CairnError, InvalidInput, NotFound
from tests.contract.aws_storage import BUCKET, REGION, S3_CONFIG, fake_credentials, s3_blobs


@pytest.fixture
def blobs(request: pytest.FixtureRequest) -> Iterator[S3BlobStore]:
    with s3_blobs(request) as store:
        yield store


def keys(store: S3BlobStore) -> list[str]:
    listed = store.client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return sorted(o["Key"] for o in listed)


def test_keys_live_under_the_prefix(blobs: S3BlobStore) -> None:
    blobs.put("brain/doc/a.md", b"x")
    assert blobs.prefix == "blobs/"
    assert keys(blobs) == ["blobs/brain/doc/a.md"]
    other = S3BlobStore(blobs.client, BUCKET)
    assert not other.exists("brain/doc/a.md")
    other.put("brain/doc/a.md", b"y")
    assert blobs.get("brain/doc/a.md") == b"x"
    assert S3BlobStore(blobs.client, BUCKET, "blobs/").get("brain/doc/a.md") == b"x"


def test_prefix_and_key_together_must_fit_s3s_key_limit(blobs: S3BlobStore) -> None:
    longest = "k" * (1024 - len("blobs/"))
    blobs.put(longest, b"x")
    with pytest.raises(InvalidInput, match="prefix"):
        blobs.put(longest + "k", b"x")
    with pytest.raises(InvalidInput):
        S3BlobStore(blobs.client, BUCKET, "../up")


def test_encryption_is_the_buckets_default_not_set_per_call(blobs: S3BlobStore) -> None:
    sent: list[dict[str, Any]] = []
    blobs.client.meta.events.register("before-call.s3.PutObject", lambda params, **_: sent.append(params))
    blobs.put("a", b"secret bytes")
    assert "ServerSideEncryption" not in sent[0]
    head = blobs.client.head_object(Bucket=BUCKET, Key="blobs/a")
    assert head["ServerSideEncryption"] == "AES256"


def test_delete_on_a_versioned_bucket_removes_every_version(blobs: S3BlobStore) -> None:
    blobs.put("a", b"1")
    blobs.put("a", b"2")
    blobs.put("ab", b"neighbour")
    blobs.delete("a")
    assert not blobs.exists("a")
    with pytest.raises(NotFound, match="'a'"):
        blobs.get("a")
    versions = blobs.client.list_object_versions(Bucket=BUCKET, Prefix="blobs/a")
    left = [v["Key"] for v in [*versions.get("Versions", []), *versions.get("DeleteMarkers", [])]]
    assert left == ["blobs/ab"]  # a hard delete is for good: no old bytes wait for a lifecycle rule


def test_delete_prefix_on_a_versioned_bucket_removes_every_version(blobs: S3BlobStore) -> None:
    blobs.put("brn_1/x", b"1")
    blobs.put("brn_1/x", b"2")
    blobs.put("brn_1/y", b"3")
    blobs.delete("brn_1/y")  # only versions left behind a delete marker: still the folder's
    blobs.put("brn_10/z", b"kept")
    assert blobs.delete_prefix("brn_1/") == 1
    versions = blobs.client.list_object_versions(Bucket=BUCKET, Prefix="blobs/brn_1")
    left = [v["Key"] for v in [*versions.get("Versions", []), *versions.get("DeleteMarkers", [])]]
    assert left == ["blobs/brn_10/z"]


def test_large_binary_round_trips(blobs: S3BlobStore) -> None:
    data = bytes(range(256)) * 40_000  # ~10 MB in one PutObject
    blobs.put("big.bin", data)
    assert blobs.get("big.bin") == data


def _stubbed(request: pytest.FixtureRequest) -> tuple[S3BlobStore, Stubber]:
    fake_credentials(request.getfixturevalue("monkeypatch"))
    client = boto3.client("s3", region_name=REGION, config=S3_CONFIG)
    return S3BlobStore(client, BUCKET), Stubber(client)


def test_service_errors_carry_the_code_but_no_account_details(request: pytest.FixtureRequest) -> None:
    store, stub = _stubbed(request)
    secret = "User: arn:aws:sts::123456789012:assumed-role/cairn-api/x is not authorized"
    with stub:
        stub.add_client_error("get_object", "AccessDenied", secret, http_status_code=403)
        stub.add_client_error("head_object", "403", "Forbidden", http_status_code=403)
        with pytest.raises(CairnError) as got:
            store.get("a")
        with pytest.raises(CairnError) as head:
            store.exists("a")
    assert got.value.message == "S3 GetObject failed (AccessDenied)"
    assert not isinstance(got.value, NotFound)
    assert head.value.message == "S3 HeadObject failed (403)"
    assert "123456789012" not in str(got.value)


def test_a_missing_bucket_is_an_error_not_a_missing_blob(blobs: S3BlobStore) -> None:
    store = S3BlobStore(blobs.client, "no-such-bucket")
    with pytest.raises(CairnError, match=r"^S3 GetObject failed \(NoSuchBucket\)$") as caught:
        store.get("a")
    assert not isinstance(caught.value, NotFound)
    with pytest.raises(CairnError, match="NoSuchBucket"):
        store.put("a", b"x")
