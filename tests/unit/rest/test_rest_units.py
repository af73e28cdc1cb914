"""Pure pieces of the REST surface: status mapping, SSE frames, batch decoding, schemas."""

from __future__ import annotations

import base64

import pytest

from cairn.domain import errors
from cairn.domain.errors import CairnError, InvalidInput, PayloadTooLarge
from cairn.entrypoints.rest.batch import BatchBody, BatchOpBody, decode_ops
from cairn.entrypoints.rest.body import inline_schema
from cairn.entrypoints.rest.events import frame
from cairn.entrypoints.rest.problems import STATUS_BY_CODE, UnsupportedMediaType


def _error_classes() -> list[type[CairnError]]:
    found = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, CairnError)]
    return [*found, UnsupportedMediaType]


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_every_error_code_has_a_status(cls: type[CairnError]) -> None:
    assert cls.code in STATUS_BY_CODE


def test_store_protocol_statuses() -> None:
    expected = {
        "validation_error": 400,
        "not_found": 404,
        "conflict": 409,
        "forbidden": 403,
        "payload_too_large": 413,
        "file_too_large": 413,
        "unsupported_media_type": 415,
        "no_brain": 404,
        "fetch_failed": 502,
        "internal_error": 500,
    }
    assert {code: STATUS_BY_CODE[code] for code in expected} == expected


def test_sse_frame_layout() -> None:
    assert frame(3, "ready", "ok") == b"id: 3\nevent: ready\ndata: ok\n\n"
    assert frame(4, "change", "a\nb") == b"id: 4\nevent: change\ndata: a\ndata: b\n\n"


def _op(type_: str, content: bytes | None = None, **kw: str) -> BatchOpBody:
    encoded = base64.b64encode(content).decode() if content is not None else None
    return BatchOpBody(type=type_, path="a.md", content_base64=encoded, **kw)  # type: ignore[arg-type]


def test_decode_ops_counts_decoded_bytes() -> None:
    ops = decode_ops([_op("write", b"12345"), _op("delete"), _op("append", b"67890")], max_bytes=10)
    assert [o.content for o in ops] == [b"12345", b"", b"67890"]
    with pytest.raises(PayloadTooLarge):
        decode_ops([_op("write", b"12345"), _op("append", b"678901")], max_bytes=10)


def test_decode_ops_rejects_bad_input() -> None:
    with pytest.raises(InvalidInput):
        decode_ops([BatchOpBody(type="write", path="a.md", content_base64="***")], max_bytes=10)
    with pytest.raises(InvalidInput):
        decode_ops([_op("rename")], max_bytes=10)
    with pytest.raises(InvalidInput):
        decode_ops([_op("append")], max_bytes=10)


def test_inline_schema_has_no_dangling_refs() -> None:
    schema = inline_schema(BatchBody)
    assert "$defs" not in schema and "$ref" not in str(schema)
    assert schema["properties"]["ops"]["items"]["properties"]["type"]["enum"] == [
        "write",
        "append",
        "delete",
        "rename",
    ]
