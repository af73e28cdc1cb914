"""DownloadSigner: lets a client read a large blob straight from the blob store, past the API's
response limit.

On AWS a Lambda response through API Gateway carries at most 6 MB, and binary bodies travel
base64-encoded (4 bytes for every 3), so a document of more than ~4.4 MiB cannot come back in the
response itself. Above a threshold the store protocol's read answers with a redirect to a presigned
GET instead (entrypoints/rest/documents.py). The embedded server has no such limit and offers no
signer: its reads always carry the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class PresignedDownload:
    url: str  # a bearer credential for one object until `expires_at`: never logged
    expires_at: datetime


class DownloadSigner(Protocol):
    def presign_download(self, key: str, *, expires_in: int, content_type: str) -> PresignedDownload:
        """A GET URL that reads blob `key` for `expires_in` s, answered with `content_type`."""
