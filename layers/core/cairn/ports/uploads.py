"""UploadSigner: lets a client put a file straight into the blob store, past the API's body limit.

On AWS a request through API Gateway and Lambda carries at most 6 MB, so files up to the 25 MiB
ingest limit go to S3 with a presigned POST and are then ingested by key (REST ingest/upload, or
memory_ingest_file with the key as its `path`). The embedded server has no such limit (it takes the
file in the multipart upload) and offers no signer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class PresignedUpload:
    url: str
    fields: dict[str, str]  # sent as form fields before the `file` field
    expires_at: datetime


class UploadSigner(Protocol):
    def presign_upload(
        self, key: str, *, max_bytes: int, content_type: str | None, expires_in: int
    ) -> PresignedUpload:
        """A form POST that stores 1..`max_bytes` bytes under blob `key` until `expires_in` s pass."""

    def size(self, key: str) -> int | None:
        """The size of blob `key` without reading it; None when it does not exist."""

    def key_of(self, url: str) -> str | None:
        """The blob key an object URL of this store names (S3: `s3://<bucket>/<prefix><key>`);
        None when `url` names anything else (another bucket, an object outside the prefix)."""
