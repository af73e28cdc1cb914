"""A reranker over the Bedrock Agent Runtime `Rerank` API (amazon.rerank-v1:0, cohere.rerank-v3-5:0).

One query and inline text sources go to the model named by its foundation-model ARN
(`arn:aws:bedrock:<region>::foundation-model/<model id>`); results come back as
`[{index, relevanceScore}]`, followed through `nextToken` when the service pages them.

Limits (the service model): at most 1000 sources per request, `numberOfResults` 1..1000, a text
of 1..32,000 characters. More than 1000 documents are sent in batches of 1000 and the results
merged by score (a cross-encoder scores each query-document pair on its own, so scores from
different batches compare), each batch asked for at most top_n. A text longer than 32,000
characters is cut to that length, and an empty one is sent as a single space (the API refuses
empty text). The API takes no instruction: `instruction` is ignored.

Throttling and server-side failures are retried with backoff (retrying.RetryPolicy); the
client should be built with botocore's retries off, as for the other Bedrock adapters.
Errors name the model and the service's error code; the service's message is kept only when it
does not quote the input (rerank_replies.safe_detail), and never an access key id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

from cairn.adapters.aws.bedrock_errors import TRANSPORT_ERRORS, clean, describe
from cairn.adapters.remote_reranker import RemoteReranker
from cairn.adapters.rerank_replies import best, ranked, safe_detail
from cairn.adapters.retrying import RetryPolicy, Transient
from cairn.ports.reranker import Ranked, RerankCode, RerankError

BedrockAgentRuntime = Any  # a boto3 "bedrock-agent-runtime" client; no type stubs are installed for it
DEFAULT_MODEL = "amazon.rerank-v1:0"
MAX_SOURCES = 1000
MAX_TEXT_CHARS = 32_000
_MAX_PAGES = 100  # a service that keeps sending nextToken is not followed forever
_SCORE_KEYS = ("relevanceScore",)
_RATE = frozenset({"throttlingexception", "toomanyrequestsexception"})
_SERVER = frozenset(
    {
        "internalserverexception",
        "badgatewayexception",
        "dependencyfailedexception",
        "serviceunavailableexception",
        "modelnotreadyexception",
    }
)
_TRANSPORT_CODES: dict[str, RerankCode] = {
    "generation_timeout": "rerank_timeout",
    "bad_response": "rerank_bad_response",
}
_UNAVAILABLE = frozenset(
    {
        "accessdeniedexception",
        "resourcenotfoundexception",
        "unrecognizedclientexception",
        "expiredtokenexception",
        "invalidsignatureexception",
    }
)


def model_arn(model: str, region: str) -> str:
    """The foundation-model ARN of `model`, or `model` itself when it already is an ARN."""
    if model.startswith("arn:"):
        return model
    partition = (
        "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
    )
    return f"arn:{partition}:bedrock:{region}::foundation-model/{model}"


class BedrockReranker(RemoteReranker):
    def __init__(
        self,
        client: BedrockAgentRuntime,
        model: str = DEFAULT_MODEL,
        region: str | None = None,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        """`model`: a model id (amazon.rerank-v1:0) or a model ARN; `region` defaults to the client's."""
        super().__init__(retry or RetryPolicy())
        self._client = client
        self._model = model
        self._arn = model_arn(model, region or str(client.meta.region_name))
        self._where = f"Bedrock reranker {model.rsplit('/', 1)[-1]}"

    @property
    def model_id(self) -> str:
        return f"bedrock:{self._model.rsplit('/', 1)[-1]}"

    @property
    def arn(self) -> str:
        return self._arn

    def _rank(
        self, query: str, documents: Sequence[str], instruction: str | None, wanted: int
    ) -> list[Ranked]:
        inputs = [query, *documents]
        results: list[Ranked] = []
        for start in range(0, len(documents), MAX_SOURCES):
            batch = documents[start : start + MAX_SOURCES]
            results.extend(self._batch(query, batch, min(wanted, len(batch)), start, inputs))
        return best(results, wanted)

    def _batch(
        self, query: str, batch: Sequence[str], wanted: int, offset: int, inputs: Sequence[str]
    ) -> list[Ranked]:
        request: dict[str, Any] = {
            "queries": [{"type": "TEXT", "textQuery": {"text": _text(query)}}],
            "sources": [
                {
                    "type": "INLINE",
                    "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": _text(d)}},
                }
                for d in batch
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": wanted,
                    "modelConfiguration": {"modelArn": self._arn},
                },
            },
        }
        items: list[Any] = []
        for _ in range(_MAX_PAGES):
            reply = self._call(request, inputs)
            page = reply.get("results") if isinstance(reply, dict) else None
            if not isinstance(page, list):
                raise RerankError(
                    "rerank_bad_response", f"{self._where} sent a reply without results", retryable=False
                )
            items.extend(page)
            token = reply.get("nextToken")
            if not token or len(items) >= wanted:
                break
            request = {**request, "nextToken": token}
        return ranked(items, len(batch), where=self._where, score_keys=_SCORE_KEYS, offset=offset)[:wanted]

    def _call(self, request: dict[str, Any], inputs: Sequence[str]) -> Any:
        def attempt() -> Any:
            try:
                return self._client.rerank(**request)
            except TRANSPORT_ERRORS as exc:
                error, transient = self._failure(exc, inputs)
            # raised out here: no context chain back to botocore, whose exceptions hold the request
            raise Transient(error) if transient else error

        return self._retrying(attempt)

    def _failure(self, exc: BaseException, inputs: Sequence[str]) -> tuple[RerankError, bool]:
        """The RerankError for a failed call, and whether to try again after a pause."""
        if isinstance(exc, ClientError):
            return self._refusal(exc, inputs)
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return RerankError(
                "rerank_unavailable", f"no AWS credentials for {self._where}", retryable=False
            ), False
        # describe's words for transport failures name only the model and the exception class
        failure = describe(exc, self._model)
        message = failure.message.replace(f"Bedrock model {self._model}", self._where)
        code = _TRANSPORT_CODES.get(failure.code, "rerank_failed")
        if code == "rerank_failed" and failure.transient:
            code = "rerank_unavailable"  # the connection never got going
        return RerankError(code, message, retryable=failure.retryable), failure.transient

    def _refusal(self, exc: ClientError, inputs: Sequence[str]) -> tuple[RerankError, bool]:
        error = exc.response.get("Error", {}) if isinstance(exc.response, dict) else {}
        name = str(error.get("Code") or "UnknownError")
        said = safe_detail(clean(str(error.get("Message") or "")), inputs)
        detail = f" ({name}): {said}" if said else f" ({name})"
        kind = name.lower()
        if kind in _UNAVAILABLE:
            return RerankError(
                "rerank_unavailable", f"{self._where} cannot be used{detail}", retryable=False
            ), False
        if kind in _RATE:
            return RerankError(
                "rerank_failed", f"{self._where} is rate limiting requests{detail}", retryable=True
            ), True
        if kind in _SERVER:
            return RerankError("rerank_failed", f"{self._where} failed{detail}", retryable=True), True
        if kind == "modeltimeoutexception":
            return RerankError("rerank_timeout", f"{self._where} timed out{detail}", retryable=True), False
        # ValidationException, ServiceQuotaExceededException, ConflictException, ...
        return RerankError(
            "rerank_failed", f"{self._where} refused the request{detail}", retryable=False
        ), False


def _text(text: str) -> str:
    return text[:MAX_TEXT_CHARS] if text else " "
