"""Contract-suite factories for the AWS storage adapters, under moto's in-process mock_aws.

`s3_blobs(request)` and `dynamodb_records(request)` start moto, create the bucket / table the
way the SAM template does (docs/DYNAMODB.md), and yield a ready adapter. No socket is opened.

moto's backends are not thread-safe (a conditional write is a read then a write in Python,
and a TransactWriteItems rollback restores a copy of the whole table), while S3 and DynamoDB
apply each request atomically. The factories therefore serialise moto's request handling, so
the concurrency tests exercise the adapters against the guarantees the real services give.
They also make moto snapshot a table once per TransactWriteItems instead of once per item
(the same state each time; 100 copies of a large table made the staged-transaction tests slow),
and answer a Query on the table from the one partition it names: moto sorts every item of the
table to find them, which made each query as slow as the table was large
(tests/unit/aws/test_moto_shims.py checks that both answers are the same). And moto's KMS makes
one RSA key per key spec, not one per test: each test's table made a default encryption key with a
new 2048-bit RSA key (a tenth of a second, hundreds of tables a run) that nothing here uses.
A TransactWriteItems is undone, when one of its writes fails, by putting back a copy of each item it
names (they are distinct, as DynamoDB requires) rather than a copy of the whole table: the world of
the visibility matrices took 37 ms a transaction on moto, growing with the table.
moto also listed a response class's methods (inspect.getmembers) on every request to find the
action's handler: a sixth of a GetItem's time; the list is kept per class, as a class's methods
do not change. The factories' clients come from one boto3 session (`client`): mock_aws hides
boto3's default session, so `boto3.client` made a new one for each test's table or bucket and
loaded the endpoint data and the service's model again (0.1-0.2 s a test).
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws
from moto.core import responses as moto_responses
from moto.core.botocore_stubber import BotocoreStubber
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.exceptions import ItemSizeTooLarge
from moto.dynamodb.models import dynamo_type
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.kms import models as kms_models

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.s3_blobs import S3BlobStore

REGION = "us-east-1"
BUCKET = "cairn-test-blobs"
TABLE = "cairn-test-records"
TTL_ATTRIBUTE = "expires_at"

# What bootstrap should pass to boto3: standard retries (throttling backs off and retries),
# short connect timeouts, and a pool as large as the threads that share one client.
DYNAMODB_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 10},
    connect_timeout=3,
    read_timeout=10,
    max_pool_connections=32,
)
S3_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=3,
    read_timeout=30,
    max_pool_connections=32,
    signature_version="s3v4",  # as bootstrap signs presigned URLs (bootstrap/aws.py)
)


def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """So boto3 never looks for real credentials (files, instance metadata)."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)


class _SnapshotOnce:
    """Stands in for the `copy` module in moto's DynamoDB backend: one copy of a table per request,
    none while `live` (a transaction undone item by item: _items_undone)."""

    def __init__(self) -> None:
        self.tables: dict[int, Table] = {}
        self.live = False

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        if not isinstance(value, Table):
            return copy.deepcopy(value, memo)
        if self.live:
            return value
        if id(value) not in self.tables:
            self.tables[id(value)] = copy.deepcopy(value)
        return self.tables[id(value)]


_Before = tuple[Table, DynamoType, DynamoType | None, Any]


def _items_before(backend: Any, transact_items: list[dict[str, Any]]) -> list[_Before] | None:
    """A copy of each item a TransactWriteItems names, as it is before (None for an absent one);
    None when one table has a stream (moto's copy of the table keeps its records too). An entry
    whose key cannot be read is left out: moto refuses it before writing anything."""
    before: list[_Before] = []
    for entry in transact_items:
        try:
            op_type, op = next(iter(entry.items()))
            table = backend.tables[op["TableName"]]
            attrs = op["Item"] if op_type == "Put" else op["Key"]
            hash_key = DynamoType(attrs[table.hash_key_attr])
            range_key = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
            held = table.get_item(hash_key, range_key)
        except Exception:  # moto answers it with its own error
            continue
        if table.stream_shard is not None:
            return None
        before.append((table, hash_key, range_key, copy.deepcopy(held)))
    return before


def _put_back(before: list[_Before]) -> None:
    for table, hash_key, range_key, held in reversed(before):
        if held is None:
            table.delete_item(hash_key, range_key)
        elif range_key is not None:
            table.items[hash_key][range_key] = held
        else:
            table.items[hash_key] = held


def partition_query(table: Table, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
    """moto's Table.query, reading only the partition `hash_key` names when it queries the table
    itself (not an index): the same items, which it then orders by range key as before. Runs
    under serialized_moto's lock, so the table's items cannot change meanwhile."""
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if index_name is not None or hash_key is None or not table.range_key_attr:
        return _MOTO_QUERY(table, hash_key, *args, **kwargs)
    partition = list(table.items[hash_key].values()) if hash_key in table.items else []
    table.all_items = lambda: partition  # type: ignore[method-assign]
    try:
        return _MOTO_QUERY(table, hash_key, *args, **kwargs)
    finally:
        del table.all_items


_MOTO_QUERY = Table.query


@functools.cache
def one_private_key(key_spec: str) -> Any:
    """moto's KMS key material, made once per key spec."""
    return _MOTO_PRIVATE_KEY(key_spec)


_MOTO_PRIVATE_KEY = kms_models.generate_private_key
_MOTO_TRANSACT = dynamodb_models.DynamoDBBackend.transact_write_items
_METHOD_NAMES = functools.cache(moto_responses.method_names_from_class)
"""moto's list of a response class's methods, made once per class."""


def _attribute_bytes(value: Any) -> int:
    return value.size() if type(value) is dynamo_type.DynamoType else dynamo_type.bytesize(str(value))


def item_size_after_write(item: dynamo_type.LimitedSizeDict, key: str, value: Any) -> None:
    """moto's item-size check counting the item as it will be, as DynamoDB does: moto adds the
    attribute's old value to its new one, so rewriting any item over ~202 KB failed under moto
    (and only there). moto's own limit (405,000 bytes, between DynamoDB's 400 KB and what AWS
    accepts) is kept."""
    others = sum(dynamo_type.bytesize(k) + _attribute_bytes(v) for k, v in item.items() if k != key)
    if others + dynamo_type.bytesize(key) + _attribute_bytes(value) > 405_000:
        raise ItemSizeTooLarge
    dict.__setitem__(item, key, value)


@contextmanager
def serialized_moto() -> Iterator[None]:
    """One moto request at a time: each request atomic, as the real services guarantee."""
    lock = threading.Lock()
    snapshots = _SnapshotOnce()
    original = BotocoreStubber.process_request

    def process_request(self: BotocoreStubber, request: Any) -> Any:
        with lock:
            snapshots.tables.clear()
            return original(self, request)

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        before = _items_before(backend, transact_items)
        if before is None:
            return _MOTO_TRANSACT(backend, transact_items)
        snapshots.live = True
        try:
            return _MOTO_TRANSACT(backend, transact_items)
        except Exception:
            _put_back(before)
            raise
        finally:
            snapshots.live = False

    with (
        mock.patch.object(BotocoreStubber, "process_request", process_request),
        mock.patch.object(dynamodb_models, "copy", snapshots),
        mock.patch.object(dynamodb_models.DynamoDBBackend, "transact_write_items", transact_write_items),
        mock.patch.object(Table, "query", partition_query),
        mock.patch.object(kms_models, "generate_private_key", one_private_key),
        mock.patch.object(moto_responses, "method_names_from_class", _METHOD_NAMES),
        mock.patch.object(dynamo_type.LimitedSizeDict, "__setitem__", item_size_after_write),
    ):
        yield


@contextmanager
def mocked_aws(request: pytest.FixtureRequest) -> Iterator[None]:
    with moto_with(request.getfixturevalue("monkeypatch")):
        yield


@contextmanager
def moto_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """mocked_aws with the caller's monkeypatch (a fixture wider than one test has its own)."""
    fake_credentials(monkeypatch)
    with mock_aws(), serialized_moto():
        yield


@functools.cache
def _session() -> boto3.session.Session:
    return boto3.session.Session()


def client(service: str, config: Config) -> Any:
    """A client of moto's `service` from the factories' one session (made in the first mock_aws, so
    it holds fake_credentials' keys); call it inside mock_aws."""
    return _session().client(service, region_name=REGION, config=config)


def create_table(client: Any, name: str) -> None:
    """The table as template.yaml declares it: pk/sk strings, on-demand, TTL, PITR, SSE."""
    client.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
        SSESpecification={"Enabled": True},
    )
    client.get_waiter("table_exists").wait(TableName=name)
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
    client.update_continuous_backups(
        TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )


def create_bucket(client: Any, name: str) -> None:
    """The bucket as template.yaml declares it: versioned, encrypted by default, never public."""
    client.create_bucket(Bucket=name)
    client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    client.put_bucket_encryption(
        Bucket=name,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    client.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )


@contextmanager
def s3_blobs(request: pytest.FixtureRequest) -> Iterator[S3BlobStore]:
    with mocked_aws(request):
        s3 = client("s3", S3_CONFIG)
        create_bucket(s3, BUCKET)
        yield S3BlobStore(s3, BUCKET, prefix="blobs")


@contextmanager
def dynamodb_records(request: pytest.FixtureRequest) -> Iterator[DynamoRecordStore]:
    with mocked_aws(request):
        dynamodb = client("dynamodb", DYNAMODB_CONFIG)
        create_table(dynamodb, TABLE)
        yield DynamoRecordStore(dynamodb, TABLE)
