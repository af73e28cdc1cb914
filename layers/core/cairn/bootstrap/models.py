"""The model adapters Settings ask for, on either backend: the embedder on this machine, the
generator, the fact extractor and reflector, and the reranker (docs/RERANKING.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cairn.config import Settings
from cairn.ports.embedder import Embedder
from cairn.ports.facts import FactExtractor
from cairn.ports.generator import Generator
from cairn.ports.reflection import Reflector
from cairn.ports.reranker import Reranker


def reranker_for(
    settings: Settings, *, bedrock_client_factory: Callable[[str], Any] | None = None
) -> Reranker | None:
    """None when `reranker = "none"`. `bedrock_client_factory(service)` gives the boto3 client
    (bootstrap.aws.AwsClients); without one a client is built here with botocore's retries off,
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


def distillers_for(settings: Settings) -> tuple[FactExtractor, Reflector]:
    """The fact extractor and reflector: the generator's model when one is configured, else rules."""
    if settings.generator == "openai":
        from cairn.adapters.local.openai_chat import OpenAIChat
        from cairn.adapters.local.openai_facts import OpenAIFactExtractor
        from cairn.adapters.local.openai_reflect import OpenAIReflector

        key = settings.generator_api_key
        chat = OpenAIChat(
            settings.generator_base_url,
            settings.extractor_model or settings.generator_model,
            api_key=key.get_secret_value() if key else None,
            timeout_s=settings.extractor_timeout_s,
            max_retries=settings.extractor_max_retries,
        )
        extractor = OpenAIFactExtractor(
            chat,
            max_batch_utterances=settings.extractor_batch_utterances,
            max_batch_chars=settings.extractor_batch_chars,
        )
        return extractor, OpenAIReflector(chat, max_chars=settings.extractor_batch_chars)
    from cairn.adapters.local.rule_facts import RuleFactExtractor
    from cairn.adapters.local.rule_reflect import RuleReflector

    return RuleFactExtractor(), RuleReflector()


def generator_for(settings: Settings, embedder: Embedder | None = None) -> Generator:
    """The generator the settings name; the extractive one picks sentences by `embedder`'s cosine
    to the question, answering from the embedding model's calibrated midpoint on."""
    from cairn.adapters.local.extractive import ExtractiveGenerator

    if settings.generator == "openai":
        from cairn.adapters.local.openai_compat import OpenAICompatGenerator

        key = settings.generator_api_key
        return OpenAICompatGenerator(
            settings.generator_base_url,
            settings.generator_model,
            api_key=key.get_secret_value() if key else None,
            timeout_s=settings.generator_timeout_s,
            max_retries=settings.generator_max_retries,
            backoff_s=settings.generator_backoff_s,
        )
    if embedder is None:
        return ExtractiveGenerator(max_sentences=settings.extractive_sentences)
    from cairn.services.search.relevance import EMBEDDED, calibration_for

    calibration = calibration_for(embedder.model_id, settings.relevance_midpoint, settings.relevance_slope)
    return ExtractiveGenerator(
        max_sentences=settings.extractive_sentences,
        embedder=embedder,
        min_similarity=(calibration or EMBEDDED).midpoint,
    )


def local_embedder(settings: Settings) -> Embedder:
    from cairn.adapters.local.onnx_embedder import OnnxEmbedder, bulk_threads

    threads, workers = settings.onnx_threads, settings.onnx_workers
    if threads == 0:  # not configured: one thread a run, one run a core (see bulk_threads)
        threads, cores = bulk_threads()
        workers = max(workers, cores)
    return OnnxEmbedder(threads=threads, workers=workers)


def for_bulk(settings: Settings) -> Settings:
    """The settings a bulk load (`cairn ingest`) runs with: when the ONNX threads
    are not configured, the bulk split of the cores (onnx_embedder.bulk_threads) rather than the
    serving one."""
    if settings.onnx_threads != 0:
        return settings
    from cairn.adapters.local.onnx_embedder import bulk_threads

    threads, workers = bulk_threads()
    return settings.model_copy(update={"onnx_threads": threads, "onnx_workers": workers})
