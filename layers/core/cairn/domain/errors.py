"""Errors the core raises; each surface maps them onto its own error style."""

from __future__ import annotations


class CairnError(Exception):
    """Base class. `code` is the machine-readable identifier surfaces expose."""

    code = "internal_error"
    max_message = 1000
    """A message built from a caller's input never grows with it (quote with domain/text.excerpt)."""

    def __init__(self, message: str) -> None:
        if len(message) > self.max_message:
            message = message[: self.max_message] + "…"
        super().__init__(message)
        self.message = message


class NotFound(CairnError):
    code = "not_found"


class InvalidInput(CairnError):
    code = "validation_error"


class InvalidPath(InvalidInput):
    code = "validation_error"


class Conflict(CairnError):
    code = "conflict"


class RecordConflict(Conflict):
    """A conditional write of the record store lost to another writer. Its `message`, what every
    surface tells a caller, names no record: record keys are internal. `str()` (logs, tests) says
    which record and which versions."""

    def __init__(self, detail: str) -> None:
        super().__init__("another writer changed the same record first: try again")
        self.detail = detail

    def __str__(self) -> str:
        return self.detail


class VersionConflict(Conflict):
    """A write that expected one version of a document found another.

    `current_version` is the version there now, None when no live document is there;
    `expected_version` is what the writer sent (None: it meant to create)."""

    def __init__(self, message: str, *, current_version: int | None, expected_version: int | None) -> None:
        super().__init__(message)
        self.current_version = current_version
        self.expected_version = expected_version


class Unavailable(CairnError):
    """What the request needs is not ready yet (a brain's index being rebuilt): the caller should
    retry after `retry_after_s` seconds; nothing is wrong with the request."""

    code = "unavailable"

    def __init__(self, message: str, *, retry_after_s: int = 5) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DamagedContent(CairnError):
    """A document's stored bytes are gone or no longer read back as written (a damaged disk, a file
    removed by hand): never served as the document. `cairn check --deep` lists such documents."""

    code = "damaged_content"


class PayloadTooLarge(CairnError):
    code = "payload_too_large"


class FileTooLarge(CairnError):
    code = "file_too_large"


class NoBrain(CairnError):
    code = "no_brain"


class Forbidden(CairnError):
    code = "forbidden"


class FetchRefused(CairnError):
    """A URL the server will not fetch (private address, bad scheme)."""

    code = "url_refused"


class FetchFailed(CairnError):
    code = "fetch_failed"


class UnsupportedContent(InvalidInput):
    code = "unsupported_content"
