"""`backend = "aws"` refuses to start without every AWS resource it needs, naming the missing
settings, instead of keeping that port's data in the container's /tmp; local emulation asks for the
embedded fallbacks explicitly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.bootstrap import build_container
from cairn.bootstrap.aws import IncompleteAwsSettings, aws_adapters, check_aws_settings
from cairn.config import Settings
from tests.contract.aws_storage import fake_credentials

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:cairn-{}-dev"
COMPLETE = {
    "backend": "aws",
    "bucket": "cairn-dev-documentbucket",
    "table": "cairn-dev-RecordTable",
    "opensearch_url": "https://search-cairn-dev.us-east-1.es.amazonaws.com",
    "store_secret_id": "arn:aws:secretsmanager:us-east-1:123456789012:secret:StoreSecret-AbCdEf",
    "state_machine_arns": {
        "job": ARN.format("jobs"),
        "ingest": ARN.format("ingest"),
        "consolidate": ARN.format("consolidate"),
    },
    "embedder": "bedrock",
    "generator": "extractive",
}


def settings(tmp_path: Path, **changes: object) -> Settings:
    values = {**COMPLETE, "data_dir": tmp_path / "data", **changes}
    return Settings(**values)  # type: ignore[arg-type]


def test_a_complete_configuration_passes() -> None:
    check_aws_settings(Settings(**COMPLETE))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"bucket": None}, "CAIRN_BUCKET"),
        ({"table": ""}, "CAIRN_TABLE"),
        ({"opensearch_url": ""}, "CAIRN_OPENSEARCH_URL"),  # OpenSearchMode=existing, no endpoint
        ({"opensearch_url": "  "}, "CAIRN_OPENSEARCH_URL"),
        ({"store_secret_id": ""}, "CAIRN_STORE_SECRET_ID"),
        ({"state_machine_arns": {}}, "CAIRN_STATE_MACHINE_ARNS (job, ingest, consolidate)"),
        (
            {"state_machine_arns": {"job": ARN.format("jobs")}},
            "CAIRN_STATE_MACHINE_ARNS (ingest, consolidate)",
        ),
    ],
)
def test_each_missing_resource_is_refused_by_name(
    tmp_path: Path, changes: dict[str, object], named: str
) -> None:
    with pytest.raises(IncompleteAwsSettings) as refused:
        aws_adapters(settings(tmp_path, **changes))

    assert named in str(refused.value)
    assert "CAIRN_AWS_LOCAL_FALLBACKS" in str(refused.value)
    assert not (tmp_path / "data").exists()  # refused before anything was created


def test_every_missing_setting_is_named_at_once(tmp_path: Path) -> None:
    bare = Settings(backend="aws", data_dir=tmp_path)
    with pytest.raises(IncompleteAwsSettings) as refused:
        build_container(bare)
    message = str(refused.value)
    named = ("CAIRN_BUCKET", "CAIRN_TABLE", "CAIRN_OPENSEARCH_URL", "CAIRN_STORE_SECRET_ID")
    for env in (*named, "CAIRN_STATE_MACHINE_ARNS"):
        assert env in message


def test_the_environment_of_a_half_configured_function_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a stack deployed with OpenSearchMode=existing and an empty endpoint used to run with.
    for key, value in {
        "CAIRN_BACKEND": "aws",
        "CAIRN_DATA_DIR": str(tmp_path),
        "CAIRN_BUCKET": "b",
        "CAIRN_TABLE": "t",
        "CAIRN_OPENSEARCH_URL": "",
        "CAIRN_STATE_MACHINE_ARNS": json.dumps(COMPLETE["state_machine_arns"]),
    }.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(IncompleteAwsSettings, match="CAIRN_OPENSEARCH_URL"):
        aws_adapters(Settings())


def test_local_emulation_asks_for_the_embedded_fallbacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_credentials(monkeypatch)
    local = settings(
        tmp_path, aws_local_fallbacks=True, opensearch_url="", state_machine_arns={}, bucket=None, table=None
    )

    adapters = aws_adapters(local)

    assert isinstance(adapters.chunks, SqliteChunkIndex) and isinstance(adapters.jobs, SqliteJobRunner)
    assert (tmp_path / "data" / "chunks.sqlite3").exists()
    assert Settings().aws_local_fallbacks is False


def test_the_local_emulation_environment_sets_the_fallbacks() -> None:
    env = json.loads((Path(__file__).resolve().parents[3] / "infra/local/env.json").read_text())
    for function in env.values():
        assert function["CAIRN_OPENSEARCH_URL"] == "" and function["CAIRN_AWS_LOCAL_FALLBACKS"] == "true"


def test_calibrate_embeds_with_bedrock_when_asked_on_either_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.adapters.aws.bedrock_embedder import BedrockEmbedder
    from cairn.adapters.local.onnx_embedder import OnnxEmbedder
    from cairn.bootstrap.aws import embedder_for

    fake_credentials(monkeypatch)
    local = Settings(data_dir=tmp_path, embedder="bedrock", bedrock_embedding_dim=512)
    bedrock = embedder_for(local)  # no bucket, table or cluster needed to embed
    assert isinstance(bedrock, BedrockEmbedder)
    assert bedrock.model_id == "bedrock:amazon.titan-embed-text-v2:0:512"
    assert isinstance(embedder_for(Settings(data_dir=tmp_path)), OnnxEmbedder)


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_presigned_s3_urls_are_sigv4_on_the_buckets_regional_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, region: str
) -> None:
    """botocore's default signs a presigned GET in us-east-1 and eu-west-1 with SigV2 on the global
    host; a browser or SDK following a read's redirect gets a URL S3 takes in every region."""
    from cairn.bootstrap.aws import AwsClients

    fake_credentials(monkeypatch)
    s3 = AwsClients(settings(tmp_path, aws_region=region))("s3")

    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": "cairn-docs", "Key": "b/a"}, ExpiresIn=300
    )

    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url and "X-Amz-Expires=300" in url
    host = "cairn-docs.s3.amazonaws.com" if region == "us-east-1" else f"cairn-docs.s3.{region}.amazonaws.com"
    assert url.startswith(f"https://{host}/b/a?")
