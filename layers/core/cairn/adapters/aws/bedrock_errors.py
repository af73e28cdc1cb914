"""What a failed Bedrock call means for Cairn, shared by the embedder, generator and chat adapters.

boto3 raises ClientError for the service's refusals (code `ThrottlingException`, or the
lowerCamel `throttlingException` of an error inside an event stream), BotoCoreError for transport
trouble, urllib3 errors for a stream that breaks while it is read, and eventstream.ParserError for
a stream that cannot be decoded. `describe` turns each into a Failure: the GenerationError code,
a message with the service's own words (never the request, the credentials or a dump), whether
asking again may succeed (`retryable`, for the caller), and whether the adapter itself should try
again after a pause (`transient`: throttling, an unavailable service, a connection that never got
going). A read timeout or a model timeout is retryable but not transient: the model was working,
so asking again at once doubles the load (as in openai_compat).

The adapters own their retries, so the composition root should build the client with botocore's
retries off: `Config(retries={"mode": "standard", "total_max_attempts": 1})`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import urllib3.exceptions
from botocore import eventstream
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from cairn.adapters.retrying import RetryPolicy, Transient, retrying
from cairn.ports.generator import GenerationCode, GenerationError

BedrockRuntime = Any  # a boto3 "bedrock-runtime" client; no type stubs are installed for it
TRANSPORT_ERRORS = (ClientError, BotoCoreError, urllib3.exceptions.HTTPError, eventstream.ParserError)

_RATE = frozenset({"throttlingexception", "toomanyrequestsexception"})
_QUOTA = frozenset({"servicequotaexceededexception"})
_UNAVAILABLE = frozenset(
    {"serviceunavailableexception", "internalserverexception", "modelnotreadyexception", "serviceunavailable"}
)
_MODEL_TIMEOUT = frozenset({"modeltimeoutexception"})
_MODEL_ERROR = frozenset({"modelerrorexception", "modelstreamerrorexception"})
_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
_MESSAGE_CHARS = 300
T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    code: GenerationCode
    message: str
    retryable: bool
    transient: bool = False

    def error(self) -> GenerationError:
        return GenerationError(self.code, self.message, retryable=self.retryable)


def describe(exc: BaseException, model_id: str) -> Failure:
    """The meaning of an exception from one of TRANSPORT_ERRORS, raised by a call to `model_id`."""
    where = f"Bedrock model {model_id}"
    if isinstance(exc, ClientError):
        return _refusal(exc, where)
    name = type(exc).__name__
    if isinstance(exc, ConnectTimeoutError):
        return Failure("generation_timeout", f"connecting to {where} timed out ({name})", True, True)
    if isinstance(exc, ReadTimeoutError | urllib3.exceptions.ReadTimeoutError):
        return Failure("generation_timeout", f"{where} timed out waiting for a reply ({name})", True)
    if isinstance(exc, EndpointConnectionError | ConnectionClosedError | urllib3.exceptions.HTTPError):
        return Failure("generation_failed", f"lost the connection to {where} ({name})", True, True)
    if isinstance(exc, eventstream.ParserError):
        return Failure("bad_response", f"{where} sent an event stream that cannot be decoded ({name})", True)
    # NoCredentialsError, ParamValidationError, ...: only the class name, whose messages may quote input
    return Failure("generation_failed", f"the call to {where} failed ({name})", False)


def _refusal(exc: ClientError, where: str) -> Failure:
    error = exc.response.get("Error", {}) if isinstance(exc.response, dict) else {}
    code = str(error.get("Code") or "UnknownError")
    said = clean(str(error.get("Message") or ""))
    detail = f" ({code}): {said}" if said else f" ({code})"
    kind = code.lower()
    if kind in _RATE:
        return Failure("rate_limited", f"{where} is rate limiting requests{detail}", True, True)
    if kind in _QUOTA:
        return Failure(
            "rate_limited", f"{where} refused the request: a service quota is exceeded{detail}", False
        )
    if kind in _UNAVAILABLE:
        return Failure("generation_failed", f"{where} is unavailable{detail}", True, True)
    if kind in _MODEL_TIMEOUT:
        return Failure("generation_timeout", f"{where} timed out{detail}", True)
    if kind in _MODEL_ERROR:
        return Failure("generation_failed", f"{where} failed while answering{detail}", True)
    # ValidationException, AccessDeniedException, ResourceNotFoundException, expired credentials, ...
    return Failure("generation_failed", f"{where} refused the request{detail}", False)


def clean(message: str) -> str:
    """A service message fit for an error: one line, short, with no access key id in it."""
    return _ACCESS_KEY.sub("[redacted]", " ".join(message.split()))[:_MESSAGE_CHARS]


def call_with_retries(
    call: Callable[[], T],
    model_id: str,
    policy: RetryPolicy,
    error: Callable[[Failure], Exception] = Failure.error,
) -> T:
    """`call()`, tried again after transient failures (retrying); others raise `error(failure)`."""

    def attempt() -> T:
        try:
            return call()
        except TRANSPORT_ERRORS as exc:
            failure = describe(exc, model_id)
        # raised out here: no context chain back to botocore, whose exceptions hold the request
        raise Transient(error(failure)) if failure.transient else error(failure)

    return retrying(attempt, policy)
