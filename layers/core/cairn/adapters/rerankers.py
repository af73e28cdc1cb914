"""The reranker Settings ask for (docs/RERANKING.md): none, a `/rerank` HTTP server, or Bedrock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cairn.config import Settings
from cairn.ports.reranker import Reranker


def reranker_for(
    settings: Settings, *, bedrock_client_factory: Callable[[str], Any] | None = None
) -> Reranker | None:
    """None when `reranker = "none"`. `bedrock_client_factory(service)` gives the boto3 client
    (bootstrap_aws.AwsClients); without one a client is built here with botocore's retries off,
    since the adapter retries throttling itself."""
    if settings.reranker == "http":
        from cairn.adapters.local.http_reranker import HttpReranker

        key = settings.reranker_api_key
        return HttpReranker(
            settings.reranker_base_url,
            settings.reranker_model,
            api_key=key.get_secret_value() if key else None,
            timeout_s=settings.reranker_timeout_s,
            max_retries=settings.reranker_max_retries,
        )
    if settings.reranker == "bedrock":
        from cairn.adapters.aws.bedrock_reranker import BedrockReranker
        from cairn.adapters.retrying import RetryPolicy

        factory = bedrock_client_factory or _client_factory(settings)
        return BedrockReranker(
            factory("bedrock-agent-runtime"),
            settings.bedrock_rerank_model,
            settings.aws_region,
            retry=RetryPolicy(max_retries=settings.reranker_max_retries),
        )
    return None


def _client_factory(settings: Settings) -> Callable[[str], Any]:
    def client(service: str) -> Any:
        import boto3
        from botocore.config import Config

        timeout = settings.reranker_timeout_s
        config = Config(
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=min(timeout, 5.0),
            read_timeout=timeout,
        )
        return boto3.client(
            service,
            region_name=settings.aws_region,
            endpoint_url=settings.aws_endpoint_url or None,
            config=config,
        )

    return client
