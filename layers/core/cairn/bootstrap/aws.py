"""The AWS half of the composition root: clients and adapters from Settings, one port at a time.

Every storage port needs its AWS resource (bucket, table, OpenSearch URL, the state machines):
without one, `aws_adapters` refuses to start and names what is missing, rather than quietly
keeping that port's data in the container's /tmp, where each Lambda container would see its own
and lose it. Local emulation (S3 and DynamoDB on a moto server, the rest embedded;
scripts/aws_local.py) asks for the embedded fallbacks explicitly with `aws_local_fallbacks`.
Clients are built once per process with botocore's standard retry mode; `aws_endpoint_url` sends
every client to one endpoint (moto).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.bootstrap.models import distillers_for, generator_for, local_embedder, reranker_for
from cairn.config import Settings
from cairn.container import Adapters
from cairn.domain.errors import InvalidInput
from cairn.ports.blobs import BlobStore
from cairn.ports.chunks import ChunkIndex
from cairn.ports.clock import Clock, SystemClock
from cairn.ports.embedder import Embedder
from cairn.ports.facts import FactExtractor
from cairn.ports.generator import Generator
from cairn.ports.jobs import JobRunner
from cairn.ports.records import RecordStore
from cairn.ports.reflection import Reflector
from cairn.ports.store_secret import RotatableSecret

JOB_MACHINES = ("job", "ingest", "consolidate")
"""The job kinds with a state machine of their own: ingest and consolidate run one state per step,
so they cannot fall back to the generic machine."""


class IncompleteAwsSettings(InvalidInput):
    """`backend = "aws"` without a resource it needs (the message names the settings): a command
    says it in one line, as any other invalid setting."""


def missing_aws_settings(settings: Settings) -> list[str]:
    """The environment variables `backend = "aws"` still needs, in a stable order."""
    missing = [
        env
        for env, value in (
            ("CAIRN_BUCKET", settings.bucket),
            ("CAIRN_TABLE", settings.table),
            ("CAIRN_OPENSEARCH_URL", settings.opensearch_url),
            ("CAIRN_STORE_SECRET_ID", settings.store_secret_id),
        )
        if not (value and value.strip())
    ]
    kinds = [kind for kind in JOB_MACHINES if not settings.state_machine_arns.get(kind)]
    if kinds:
        missing.append(f"CAIRN_STATE_MACHINE_ARNS ({', '.join(kinds)})")
    return missing


def check_aws_settings(settings: Settings) -> None:
    if settings.aws_local_fallbacks:
        return
    missing = missing_aws_settings(settings)
    if missing:
        raise IncompleteAwsSettings(
            "CAIRN_BACKEND=aws needs every AWS resource, and these are not configured: "
            + "; ".join(missing)
            + ". Set them (template.yaml does), or for local emulation only set "
            "CAIRN_AWS_LOCAL_FALLBACKS=true to use embedded adapters under CAIRN_DATA_DIR instead."
        )


class AwsClients:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._made: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        if service not in self._made:
            import boto3
            from botocore.config import Config

            s = self.settings
            if service == "bedrock-runtime":
                # The Bedrock adapters retry throttling themselves (with backoff, and only before
                # a stream has started): botocore must not multiply their attempts.
                config = Config(
                    retries={"mode": "standard", "total_max_attempts": 1},
                    connect_timeout=5,
                    read_timeout=60,
                    max_pool_connections=16,
                )
            elif service == "dynamodb":
                # Large transactions lock and apply items from 8 threads (dynamodb_staged.py).
                config = Config(
                    retries={"mode": "standard", "max_attempts": 10},
                    connect_timeout=3,
                    read_timeout=10,
                    max_pool_connections=32,
                )
            elif service == "bedrock-agent-runtime":
                # BedrockReranker retries throttling itself, and a search waits on it.
                config = Config(
                    retries={"mode": "standard", "total_max_attempts": 1},
                    connect_timeout=5,
                    read_timeout=s.reranker_timeout_s,
                    max_pool_connections=16,
                )
            elif service == "s3":
                # Presigned URLs (uploads, reads past 6 MB) signed with SigV4 for the bucket's own
                # regional host: botocore's default signs some regions' URLs with SigV2 on the global
                # host, which a new bucket outside us-east-1 answers with a redirect the signature
                # does not survive. An endpoint override (moto) keeps botocore's own addressing.
                config = Config(
                    retries={"mode": "standard", "max_attempts": 5},
                    tcp_keepalive=True,
                    signature_version="s3v4",
                    s3={} if s.aws_endpoint_url else {"addressing_style": "virtual"},
                )
            else:
                config = Config(retries={"mode": "standard", "max_attempts": 5}, tcp_keepalive=True)
            self._made[service] = boto3.client(
                service, region_name=s.aws_region, endpoint_url=s.aws_endpoint_url or None, config=config
            )
        return self._made[service]


def aws_adapters(settings: Settings) -> Adapters:
    """Adapters for `backend = "aws"`."""

    check_aws_settings(settings)
    clients = AwsClients(settings)
    data = settings.data_dir
    data.mkdir(parents=True, exist_ok=True)
    clock: Clock = SystemClock()
    records = _records(settings, clients, data)
    embedder = _embedder(settings, clients) if settings.embedder == "bedrock" else local_embedder(settings)
    generator = (
        _generator(settings, clients)
        if settings.generator == "bedrock"
        else generator_for(settings, embedder)
    )
    extractor, reflector = (
        _distillers(settings, clients) if settings.generator == "bedrock" else distillers_for(settings)
    )
    blobs = _blobs(settings, clients, data)
    from cairn.adapters.aws.s3_blobs import S3BlobStore

    return Adapters(
        records=records,
        blobs=blobs,
        chunks=_chunks(settings, embedder.dimension, data),
        embedder=embedder,
        clock=clock,
        generator=generator,
        jobs=_jobs(settings, clients, records, clock, data),
        extractor=extractor,
        reflector=reflector,
        store_secret=_store_secret(settings, clients, data),
        uploads=blobs if isinstance(blobs, S3BlobStore) else None,
        downloads=blobs if isinstance(blobs, S3BlobStore) else None,
        reranker=reranker_for(settings, bedrock_client_factory=clients),
    )


def _records(settings: Settings, clients: AwsClients, data: Path) -> RecordStore:
    if settings.table:
        from cairn.adapters.aws.dynamodb_records import DynamoRecordStore

        return DynamoRecordStore(clients("dynamodb"), settings.table)
    from cairn.adapters.local.sqlite_records import SqliteRecordStore

    return SqliteRecordStore(data / "records.sqlite3")


def _store_secret(settings: Settings, clients: AwsClients, data: Path) -> RotatableSecret:
    if settings.store_secret_id:
        from cairn.adapters.aws.secrets_manager_secret import SecretsManagerSecret

        return SecretsManagerSecret(clients("secretsmanager"), settings.store_secret_id)
    from cairn.adapters.local.store_secret import FileStoreSecret

    return FileStoreSecret(data / "store-secret.key")


def _blobs(settings: Settings, clients: AwsClients, data: Path) -> BlobStore:
    if settings.bucket:
        from cairn.adapters.aws.s3_blobs import S3BlobStore

        return S3BlobStore(clients("s3"), settings.bucket)
    from cairn.adapters.local.file_blobs import FileBlobStore

    return FileBlobStore(data / "blobs")


def _chunks(settings: Settings, dimension: int, data: Path) -> ChunkIndex:
    if settings.opensearch_url:
        from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex, opensearch_client

        client = opensearch_client(settings.opensearch_url, settings.aws_region, settings.opensearch_auth)
        return OpenSearchChunkIndex(
            client,
            dimension,
            index_prefix=settings.opensearch_index_prefix,
            pipeline=settings.opensearch_pipeline,
            candidate_pool=settings.candidate_pool,
            fusion=settings.opensearch_fusion,
        )
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

    return SqliteChunkIndex(data / "chunks.sqlite3", data / "vectors", dimension)


def embedder_for(settings: Settings) -> Embedder:
    """The embedder the settings name and nothing else (`cairn calibrate`): Bedrock when
    CAIRN_EMBEDDER=bedrock, on either backend; else the embedded model."""
    if settings.embedder == "bedrock":
        return _embedder(settings, AwsClients(settings))
    return local_embedder(settings)


def _embedder(settings: Settings, clients: AwsClients) -> Embedder:
    from cairn.adapters.aws.bedrock_embedder import BedrockEmbedder

    return BedrockEmbedder(
        clients("bedrock-runtime"), settings.bedrock_embedding_model, settings.bedrock_embedding_dim
    )


def _generator(settings: Settings, clients: AwsClients) -> Generator:
    from cairn.adapters.aws.bedrock_generator import BedrockGenerator

    return BedrockGenerator(clients("bedrock-runtime"), settings.bedrock_generation_model)


def _distillers(settings: Settings, clients: AwsClients) -> tuple[FactExtractor, Reflector]:
    from cairn.adapters.aws.bedrock_chat import BedrockChat
    from cairn.adapters.local.openai_facts import OpenAIFactExtractor
    from cairn.adapters.local.openai_reflect import OpenAIReflector

    chat = BedrockChat(
        clients("bedrock-runtime"), settings.extractor_model or settings.bedrock_generation_model
    )
    extractor = OpenAIFactExtractor(
        chat,
        max_batch_utterances=settings.extractor_batch_utterances,
        max_batch_chars=settings.extractor_batch_chars,
    )
    return extractor, OpenAIReflector(chat, max_chars=settings.extractor_batch_chars)


def _jobs(
    settings: Settings, clients: AwsClients, records: RecordStore, clock: Clock, data: Path
) -> JobRunner:
    if settings.state_machine_arns:
        from cairn.adapters.aws.sfn_jobs import StepFunctionsJobRunner

        return StepFunctionsJobRunner(clients("stepfunctions"), records, clock, settings.state_machine_arns)
    from cairn.adapters.local.sqlite_jobs import SqliteJobRunner

    return SqliteJobRunner(
        data / "jobs.sqlite3",
        clock,
        lease_s=settings.job_lease_s,
        max_attempts=settings.job_max_attempts,
        max_handed_over_s=settings.job_max_handed_over_s,
        workers=settings.job_workers,
    )
