"""reranker_for: the adapter each CAIRN_RERANKER setting builds, and the settings it passes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from cairn.adapters.aws.bedrock_reranker import BedrockReranker
from cairn.adapters.local.http_reranker import HttpReranker
from cairn.bootstrap.models import reranker_for
from cairn.config import Settings


def settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(data_dir=tmp_path, **values)


def test_none_by_default_and_for_none(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).reranker == "none"
    assert reranker_for(settings(tmp_path)) is None
    assert reranker_for(settings(tmp_path, reranker="none")) is None


def test_http_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_RERANKER", "http")
    monkeypatch.setenv("CAIRN_RERANKER_BASE_URL", "https://api.jina.ai/v1/")
    monkeypatch.setenv("CAIRN_RERANKER_MODEL", "jina-reranker-v2-base-multilingual")
    monkeypatch.setenv("CAIRN_RERANKER_API_KEY", "jina-key")
    monkeypatch.setenv("CAIRN_RERANKER_TIMEOUT_S", "4")
    monkeypatch.setenv("CAIRN_RERANKER_MAX_RETRIES", "1")
    reranker = reranker_for(Settings(data_dir=tmp_path))
    assert isinstance(reranker, HttpReranker)
    try:
        assert reranker.url == "https://api.jina.ai/v1/rerank"
        assert reranker.model_id == "jina-reranker-v2-base-multilingual"
        assert reranker.max_retries == 1
        assert reranker._client.headers["authorization"] == "Bearer jina-key"
        assert reranker._client.timeout.read == 4.0
    finally:
        reranker.close()


def test_http_without_a_key_sends_no_authorization(tmp_path: Path) -> None:
    reranker = reranker_for(settings(tmp_path, reranker="http"))
    assert isinstance(reranker, HttpReranker)
    try:
        assert reranker.url == "http://127.0.0.1:8000/v1/rerank"
        assert "authorization" not in reranker._client.headers
    finally:
        reranker.close()


def test_bedrock_takes_its_client_from_the_factory(tmp_path: Path) -> None:
    asked: list[str] = []
    client = object()

    def factory(service: str) -> Any:
        asked.append(service)
        return client

    s = settings(
        tmp_path,
        reranker="bedrock",
        aws_region="eu-central-1",
        bedrock_rerank_model="cohere.rerank-v3-5:0",
        reranker_max_retries=5,
        reranker_api_key=SecretStr("unused"),
    )
    reranker = reranker_for(s, bedrock_client_factory=factory)
    assert isinstance(reranker, BedrockReranker)
    assert asked == ["bedrock-agent-runtime"]
    assert reranker.arn == "arn:aws:bedrock:eu-central-1::foundation-model/cohere.rerank-v3-5:0"
    assert reranker._client is client and reranker._retry.max_retries == 5


def test_bedrock_without_a_factory_builds_a_client_without_botocores_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")  # or boto3 asks the instance metadata
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s = settings(tmp_path, reranker="bedrock", aws_region="us-west-2", reranker_timeout_s=7)
    reranker = reranker_for(s)
    assert isinstance(reranker, BedrockReranker)
    assert reranker.arn == "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    client = reranker._client
    assert client.meta.service_model.service_name == "bedrock-agent-runtime"
    assert client.meta.region_name == "us-west-2"
    assert client.meta.config.retries["total_max_attempts"] == 1
    assert client.meta.config.read_timeout == 7
