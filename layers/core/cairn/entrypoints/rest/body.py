"""Request bodies the store protocol reads by hand: media-type checks and size-capped reads.

The cap is enforced on the bytes actually received (after any gzip/deflate decoding, as
PROTOCOL.md counts them), never on Content-Length alone.
"""

from __future__ import annotations

import zlib
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from cairn.domain import json_input
from cairn.domain.errors import CairnError, InvalidInput, PayloadTooLarge
from cairn.entrypoints.rest.problems import UnsupportedMediaType, validation_detail

OCTET_STREAM = "application/octet-stream"
JSON = "application/json"

M = TypeVar("M", bound=BaseModel)


def require_media_type(request: Request, expected: str) -> None:
    raw = request.headers.get("content-type", "")
    if raw.split(";", 1)[0].strip().lower() != expected:
        raise UnsupportedMediaType(f"Content-Type must be {expected}")


class _Identity:
    def feed(self, data: bytes, room: int) -> bytes:
        return data

    def finish(self, room: int) -> bytes:
        return b""


class _Inflate:
    def __init__(self, wbits: int) -> None:
        self._z = zlib.decompressobj(wbits)

    def feed(self, data: bytes, room: int) -> bytes:
        # Output stops at `room`; reaching it means the body is over the cap anyway.
        try:
            out = self._z.decompress(data, room)
        except zlib.error:
            raise InvalidInput("request body is not valid compressed data") from None
        if self._z.unused_data:  # zlib would keep whatever follows the stream, unbounded
            raise InvalidInput("request body has data after its compressed stream")
        return out

    def finish(self, room: int) -> bytes:
        try:
            tail = self._z.flush(room)
        except zlib.error:
            raise InvalidInput("request body is not valid compressed data") from None
        if not self._z.eof:
            raise InvalidInput("compressed request body is truncated")
        return tail


def _decoder(request: Request) -> _Identity | _Inflate:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return _Identity()
    if encoding in ("gzip", "x-gzip"):
        return _Inflate(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return _Inflate(zlib.MAX_WBITS)
    raise UnsupportedMediaType(f"unsupported Content-Encoding: {encoding}")


async def read_capped(
    request: Request, limit: int, *, what: str = "request body", error: type[CairnError] = PayloadTooLarge
) -> bytes:
    """The whole (decoded) body, or `error` as soon as more than `limit` bytes arrive."""
    decoder = _decoder(request)
    if isinstance(decoder, _Identity):
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise error(f"{what} exceeds {limit} bytes")
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        if not chunk:
            continue
        out = decoder.feed(chunk, limit - size + 1)
        size += len(out)
        if size > limit:
            raise error(f"{what} exceeds {limit} bytes")
        parts.append(out)
    tail = decoder.finish(limit - size + 1)
    size += len(tail)
    if size > limit:
        raise error(f"{what} exceeds {limit} bytes")
    parts.append(tail)
    return b"".join(parts)


def parse_json(data: bytes) -> Any:
    return json_input.loads(data)


def parse_model(model: type[M], value: Any) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        detail, _ = validation_detail([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])
        raise InvalidInput(detail) from None


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema with its `$defs` inlined, for `openapi_extra` request bodies."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def json_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {JSON: {"schema": inline_schema(model)}}}}


BINARY: dict[str, Any] = {"schema": {"type": "string", "format": "binary"}}


def octet_body_doc(limit: int) -> dict[str, Any]:
    description = f"The document's bytes, at most {limit} after decoding a gzip or deflate Content-Encoding"
    body = {"required": True, "description": description, "content": {OCTET_STREAM: BINARY}}
    return {"requestBody": body}
