"""Errors the core raises; each surface maps them onto its own error style."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from cairn.domain.echo import MESSAGE_CHARS, safe_echo


class CairnError(Exception):
    """Base class. `code` is the machine-readable identifier surfaces expose."""

    code = "internal_error"
    max_message = MESSAGE_CHARS
    """A message built from a caller's input never grows with it (quote with domain/text.excerpt),
    and says it as domain/echo.py does: no credential, control character or lone surrogate."""

    def __init__(self, message: str) -> None:
        message = safe_echo(message, self.max_message)
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


class AlsoMoved(RecordConflict):
    """An erase's commit lost to a record its caller named beside the document (`also`), the
    document itself as read: `blobs` of its keys went before it, which the caller's next try no
    longer finds (its count of them)."""

    def __init__(self, detail: str, blobs: int) -> None:
        super().__init__(detail)
        self.blobs = blobs


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


STORAGE_FULL = "the server's disk is full: the request was not completed; free disk space, then send it again"


class StorageFull(Unavailable):
    """The server's disk (or the data directory's quota) is full. The request was refused where it
    could not write; a write whose record was committed before that point is not acknowledged,
    and its index intent is settled once there is room (services/documents/index_sweeper.py)."""

    code = "storage_full"

    def __init__(self, message: str = "", *, retry_after_s: int = 30) -> None:
        super().__init__(message or STORAGE_FULL, retry_after_s=retry_after_s)


class DamagedStore(DamagedContent):
    """A file of the store itself (a database, its log) is damaged or is not a file: the server
    refuses to start on it, or, found while serving, refuses what needs it. `cairn check` names it."""

    code = "damaged_store"


class BrainIndexDamaged(DamagedStore):
    """One brain's part of the search index cannot be read (on the embedded store, its keyword
    index): that brain's searches are refused until it is rebuilt, and a search over several
    brains answers from the others, naming it (services/search/damaged_brains.py)."""

    def __init__(self, message: str, brain_id: str) -> None:
        super().__init__(message)
        self.brain_id = brain_id


class DamagedRecord(DamagedStore):
    """One record of the store no longer reads as one; `key` is its (pk, sk), for the few records
    Cairn may drop and make again (services/documents/damaged_marks.py)."""

    def __init__(self, message: str, key: tuple[str, str]) -> None:
        super().__init__(message)
        self.key = key


def damaged_record(pk: str, sk: str, why: str) -> DamagedRecord:
    """A record of the store that no longer reads as one (its JSON cut or changed by hand, a
    DynamoDB item written by something else): refused as damaged, never a crash."""
    return DamagedRecord(
        f"a record of the store is damaged and cannot be read ({pk[:120]} {sk[:200]}: {why}); "
        "it was changed outside Cairn: restore the store from a backup",
        (pk, sk),
    )


@contextmanager
def reading_record(pk: str, sk: str, what: str) -> Iterator[None]:
    """Around a record decoded field by field (where a model's validation would cost a hot path):
    a field gone or of another kind is a damaged record (DamagedStore, 503), not a crash (500)."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # pydantic's ValidationError too
        raise damaged_record(pk, sk, f"it is not a {what}: {type(exc).__name__}") from None


# SQLite's primary result codes (sqlite3.SQLITE_*), named here so the domain imports no store.
_SQLITE_READONLY, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 8, 11, 13, 26


def storage_failure(exc: BaseException) -> CairnError | None:
    """What an error of the disk or of SQLite means to a caller, or None when it means a bug: a
    full disk (ENOSPC, EDQUOT, SQLITE_FULL), a database SQLite could open only read-only, or a
    damaged one. The embedded store raises what this returns where it writes (adapters/local),
    and every surface's error translation asks it before answering `internal_error`."""
    seen: BaseException | None = exc
    for _ in range(4):  # the error itself, or what it was raised from / while handling
        if seen is None:
            return None
        if isinstance(seen, CairnError):
            return seen if isinstance(seen, StorageFull | DamagedStore) else None
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return StorageFull()
        code = getattr(seen, "sqlite_errorcode", None)
        if isinstance(code, int):
            primary = code & 0xFF  # the primary code of an extended one
            if primary == _SQLITE_FULL:
                return StorageFull()
            if primary == _SQLITE_READONLY:
                return Unavailable(
                    "the server cannot write its data files (SQLite opened one read-only): "
                    "`cairn check` names what is wrong",
                    retry_after_s=30,
                )
            if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
                return DamagedStore(
                    f"a database file of the server is damaged ({seen}): `cairn check` names it "
                    "and says what to do"
                )
            return None
        seen = seen.__cause__ or seen.__context__
    return None
