"""Bedrock doubles: a client with fake credentials, event streams for botocore's Stubber, and a
scripted Bedrock runtime behind the contract factories `bedrock_embedder` and `bedrock_generator`.

moto does not implement Bedrock. Unit tests script calls with botocore's Stubber; ConverseStream
returns an EventStream, which the Stubber cannot validate, so `add_stream` queues a response that
passes validation and then puts in it a real EventStream, decoded by botocore from bytes framed
here (the AWS event-stream encoding), so in-stream errors surface as botocore raises them.

The contract suites need a model that answers whatever it is asked, from several threads at once
(the embedder's pool). A Stubber answers calls from one queue in call order: concurrent calls
would take each other's responses, and the texts are not known when the queue is filled.
`ScriptedBedrock` therefore answers at botocore's `before-send` hook (where moto hooks in): the
request is serialised, signed and its response parsed by botocore as in production; only the
HTTP exchange is replaced. Nothing leaves the process.
"""

from __future__ import annotations

import json
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any
from urllib.parse import unquote

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config
from botocore.eventstream import EventStream
from botocore.parsers import EventStreamJSONParser
from botocore.stub import Stubber

from cairn.adapters.aws.bedrock_embedder import BedrockEmbedder
from cairn.adapters.aws.bedrock_generator import BedrockGenerator
from tests.fakes.embedder import HashingEmbedder

REGION = "us-east-1"
ACCESS_KEY = "AKIAFAKEFAKEFAKEFAKE"
SECRET_KEY = "fake/secret+do-not-leak/0123456789abcdef"
GENERATION_MODEL = "amazon.nova-lite-v1:0"


def bedrock_client() -> Any:
    """A real bedrock-runtime client with fake credentials and botocore's own retries off."""
    return boto3.client(
        "bedrock-runtime",
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


# -- the event-stream encoding ------------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    key, data = name.encode(), value.encode()
    return bytes([len(key)]) + key + bytes([7]) + struct.pack(">H", len(data)) + data  # 7: string


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One message: prelude (lengths + CRC32), headers, payload, CRC32 of it all."""
    encoded = b"".join(_header(k, v) for k, v in headers.items())
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    headers = {":message-type": "event", ":event-type": kind, ":content-type": "application/json"}
    return frame(headers, json.dumps(payload).encode())


def stream_error(kind: str, message: str) -> bytes:
    """An exception inside the stream, e.g. kind="throttlingException"."""
    headers = {":message-type": "exception", ":exception-type": kind, ":content-type": "application/json"}
    return frame(headers, json.dumps({"message": message}).encode())


def answer_events(*pieces: str, stop: str | None = "end_turn") -> list[bytes]:
    """What ConverseStream sends for a text answer in `pieces`; stop=None leaves messageStop out."""
    frames = [event("messageStart", {"role": "assistant"})]
    frames += [event("contentBlockDelta", {"delta": {"text": p}, "contentBlockIndex": 0}) for p in pieces]
    frames.append(event("contentBlockStop", {"contentBlockIndex": 0}))
    if stop is not None:
        frames.append(event("messageStop", {"stopReason": stop}))
        usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
        frames.append(event("metadata", {"usage": usage, "metrics": {"latencyMs": 3}}))
    return frames


class RawStream:
    """The bytes of an HTTP response body, delivered frame by frame; `error` is raised after them."""

    def __init__(self, chunks: list[bytes], error: BaseException | None = None) -> None:
        self.chunks, self.error, self.closed = chunks, error, False

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        yield from self.chunks
        if self.error is not None:
            raise self.error

    def read(self, amt: int | None = None, decode_content: bool | None = None) -> bytes:
        return b"".join(self.stream())

    def close(self) -> None:
        self.closed = True


def add_stream(
    stubber: Stubber,
    frames: list[bytes],
    *,
    error: BaseException | None = None,
    expected_params: dict[str, Any] | None = None,
) -> RawStream:
    """Queue a ConverseStream response whose stream yields `frames` (then raises `error`)."""
    raw = RawStream(frames, error)
    shape = stubber.client.meta.service_model.operation_model("ConverseStream").output_shape
    response: dict[str, Any] = {"stream": {}}  # the Stubber validates this, then keeps the same dict
    stubber.add_response("converse_stream", response, expected_params)
    response["stream"] = EventStream(raw, shape.members["stream"], EventStreamJSONParser(), "ConverseStream")
    return raw


# -- a scripted Bedrock runtime -----------------------------------------------------------------

_PASSAGE = re.compile(r"^\[(\d+)\] (.+?)(?:\n\n|\Z)", re.M | re.S)


class ScriptedBedrock:
    """Answers InvokeModel (Titan V2 shaped, hashed bag of words), ConverseStream (quotes the first
    sentence of the first two passages, citing [n]) and Converse (`chat_reply`) for one client.
    `refuse(body)` may name an error code to answer a request with instead."""

    def __init__(
        self,
        client: Any,
        *,
        barrier: threading.Barrier | None = None,
        chat_reply: str = "{}",
        refuse: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        self.client, self.barrier, self.chat_reply, self.refuse = client, barrier, chat_reply, refuse
        self.calls: list[tuple[str, str, dict[str, Any]]] = []  # (operation, model id, body)
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __enter__(self) -> ScriptedBedrock:
        self.client.meta.events.register("before-send.bedrock-runtime", self._respond)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.client.meta.events.unregister("before-send.bedrock-runtime", self._respond)

    def _respond(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        path = request.url.split("/", 3)[-1]  # model/{model id, URL-encoded}/{operation}
        model, operation = path.split("/", 1)[1].rsplit("/", 1)
        body = json.loads(request.body or b"{}")
        with self._lock:
            self.calls.append((operation, unquote(model), body))
            self.threads.add(threading.current_thread().name)
        refusal = self.refuse(body) if self.refuse else None
        if refusal is not None:
            status = 429 if refusal == "ThrottlingException" else 400
            return self._reply(
                request, status, b'{"message": "refused"}', headers={"x-amzn-errortype": refusal}
            )
        if operation == "invoke":
            if self.barrier is not None:
                self.barrier.wait()
            return self._reply(request, 200, json.dumps(self._embedding(body)).encode())
        if operation == "converse-stream":
            frames = answer_events(*_pieces(_answer(body["messages"][-1]["content"][0]["text"])))
            return self._reply(request, 200, b"".join(frames), "application/vnd.amazon.eventstream")
        if operation == "converse":
            message = {"role": "assistant", "content": [{"text": self.chat_reply}]}
            usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
            reply = {
                "output": {"message": message},
                "stopReason": "end_turn",
                "usage": usage,
                "metrics": {"latencyMs": 3},
            }
            return self._reply(request, 200, json.dumps(reply).encode())
        error = {"x-amzn-errortype": "UnknownOperationException"}
        return self._reply(request, 400, b'{"message": "not scripted"}', headers=error)

    @staticmethod
    def _embedding(body: dict[str, Any]) -> dict[str, Any]:
        text, dimension = body["inputText"], body.get("dimensions", 1024)
        if not text:
            raise AssertionError("Titan rejects an empty inputText")
        vector = HashingEmbedder(dimension).embed([text])[0].astype(float).tolist()
        return {"embedding": vector, "inputTextTokenCount": len(text.split())}

    @staticmethod
    def _reply(
        request: AWSPreparedRequest,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> AWSResponse:
        all_headers = {"content-type": content_type, **(headers or {})}
        return AWSResponse(request.url, status, all_headers, RawStream([body]))


def _answer(prompt: str) -> str:
    passages = _PASSAGE.findall(prompt)
    return " ".join(
        f"{text.strip().splitlines()[-1].split('. ')[0].rstrip('.')} [{n}]." for n, text in passages[:2]
    )


def _pieces(answer: str, size: int = 7) -> list[str]:
    return [answer[i : i + size] for i in range(0, len(answer), size)]


# -- contract factories -------------------------------------------------------------------------


@contextmanager
def bedrock_embedder(request: pytest.FixtureRequest) -> Iterator[BedrockEmbedder]:
    client = bedrock_client()
    embedder = BedrockEmbedder(client, dimension=256, concurrency=4)
    with ScriptedBedrock(client):
        try:
            yield embedder
        finally:
            embedder.close()


@contextmanager
def bedrock_generator(request: pytest.FixtureRequest) -> Iterator[BedrockGenerator]:
    client = bedrock_client()
    with ScriptedBedrock(client):
        yield BedrockGenerator(client, GENERATION_MODEL)
