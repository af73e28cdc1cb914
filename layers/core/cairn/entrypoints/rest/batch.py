"""POST /v1/brains/{brainId}/documents/batch-ops: an atomic multi-op batch (PROTOCOL.md).

The decoded payload cap is enforced while ops are decoded one at a time, so an oversized batch
fails before the rest is decoded; the raw JSON is capped at what a maximal batch can encode to.
"""

import base64
import binascii
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.errors import InvalidInput, PayloadTooLarge
from cairn.domain.models import Brain
from cairn.entrypoints.counted_calls import step
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.body import (
    JSON,
    json_body_doc,
    parse_json,
    parse_model,
    read_capped,
    require_media_type,
)
from cairn.entrypoints.rest.deps import brain_resolver
from cairn.entrypoints.rest.wire import BatchResult
from cairn.options import Limits
from cairn.services.documents.inputs import BatchOp

OP_OVERHEAD = 2048  # JSON framing, type and paths per op


class BatchOpBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["write", "append", "delete", "rename"]
    path: str = Field(min_length=1)
    content_base64: str | None = None
    to: str | None = Field(default=None, min_length=1)


class BatchBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reason: str
    message: str | None = None
    author: str | None = None
    email: str | None = None
    ops: list[BatchOpBody]


def batch_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}/documents", tags=["store"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]
    limits = container.options.limits

    @router.post("/batch-ops", openapi_extra=json_body_doc(BatchBody))
    async def batch_ops(brain: BrainArg, request: Request) -> BatchResult:
        """Apply every op or none; `committed` is the number of ops applied."""
        require_media_type(request, JSON)
        raw = parse_json(await read_capped(request, raw_limit(limits), what="batch body"))
        _check_op_count(raw, limits.max_batch_ops)
        body = parse_model(BatchBody, raw)
        ops = decode_ops(body.ops, limits.max_batch_bytes)
        committed = await step(lambda: container.documents.batch(brain, ops, reason=body.reason))
        return BatchResult(committed=committed)

    return router


def raw_limit(limits: Limits) -> int:
    encoded = (limits.max_batch_bytes + 2) // 3 * 4
    return encoded + limits.max_batch_ops * OP_OVERHEAD + 64 * 1024


def _check_op_count(raw: Any, max_ops: int) -> None:
    ops = raw.get("ops") if isinstance(raw, dict) else None
    if isinstance(ops, list) and len(ops) > max_ops:
        raise PayloadTooLarge(f"batch has {len(ops)} ops; the limit is {max_ops}")


def decode_ops(ops: list[BatchOpBody], max_bytes: int) -> list[BatchOp]:
    decoded: list[BatchOp] = []
    total = 0
    for index, op in enumerate(ops):
        content = _decode(index, op.content_base64) if op.type in ("write", "append") else b""
        total += len(content)
        if total > max_bytes:
            raise PayloadTooLarge(f"batch payload exceeds {max_bytes} bytes after base64 decode")
        if op.type == "rename" and op.to is None:
            raise InvalidInput(f"op {index}: rename needs 'to'")
        decoded.append(BatchOp(type=op.type, path=op.path, content=content, to=op.to))
    return decoded


def _decode(index: int, value: str | None) -> bytes:
    if value is None:
        raise InvalidInput(f"op {index}: content_base64 is required for write and append")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"op {index}: content_base64 is not valid base64") from None
