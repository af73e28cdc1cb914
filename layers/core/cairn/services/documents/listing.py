"""Paged listings of a brain's documents, read from the record store one bounded query at a time.

A page holds at most its limit and is short only when the listing is complete; otherwise it
carries a cursor to the rest. Filters (glob, generated files, directories) apply before the limit,
so a page is always full until the last one.

Order is the documents' path order (UTF-8 bytes, the record store's sort-key order). In a listing
that is not recursive a directory stands where the documents beneath it are, as if its name ended
with `/`, and the scan resumes past its whole subtree with one query (`DocumentRepository.past`).

The cursor is opaque to callers: base64url of `f<path>` (the last file returned) or `d<path>`
(the last directory). A cursor that does not decode to an entry of the same listing is refused.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

from cairn.domain.errors import InvalidInput
from cairn.domain.models import Document
from cairn.domain.paths import glob_match, is_generated, validate_dir, validate_path
from cairn.services.repositories import DocumentRepository

T = TypeVar("T")

FIRST_READ = 32  # records read after jumping a directory: the next entry is usually close
MAX_READ = 1000  # records per query
MAX_CURSOR_CHARS = 8192  # base64 of a kind letter and a path of at most 1,024 four-byte characters


@dataclass(frozen=True)
class Entry:
    path: str
    is_dir: bool
    document: Document  # the file itself, or the first live document beneath the directory


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None  # None: nothing follows


def entries(
    repo: DocumentRepository,
    brain_id: str,
    directory: str = "",
    *,
    recursive: bool = False,
    glob: str | None = None,
    include_generated: bool = False,
    limit: int,
    cursor: str | None = None,
) -> Page[Entry]:
    """One page of the path listing of `directory` (the store protocol's list)."""
    directory = validate_dir(directory)
    if glob is not None:
        glob_match(glob, "")  # a malformed pattern is refused even when nothing would be matched
    _check_limit(limit)
    prefix = f"{directory}/" if directory else ""
    scan = _Scan(repo, brain_id, prefix, read=min(limit + 1, MAX_READ) if recursive else FIRST_READ)
    if cursor is not None:
        kind, path = _decode(cursor)
        rest = path[len(prefix) :]
        nested = "/" in rest
        if not path.startswith(prefix) or (kind == "d" and recursive) or (nested and not recursive):
            raise _bad_cursor()
        scan.resume_after(path, subtree=kind == "d")

    out: list[Entry] = []
    while (doc := scan.next()) is not None:
        rest = doc.path[len(prefix) :]
        entry: Entry | None = None
        if recursive or "/" not in rest:
            if include_generated or not is_generated(doc.path):
                entry = _globbed(glob, Entry(doc.path, False, doc))
        else:
            name = prefix + rest.split("/", 1)[0]
            shown = (
                doc if include_generated or not is_generated(doc.path) else _first_shown(repo, brain_id, name)
            )
            scan.skip(name)
            # a directory of generated files only lists as nothing, as listing it does
            entry = _globbed(glob, Entry(name, True, shown)) if shown is not None else None
            if entry is not None and _is_live_file(repo, brain_id, name):
                entry = None  # a file and a directory of one name: the file is listed
        if entry is None:
            continue
        if len(out) == limit:  # one more exists: the page is full and has a successor
            return Page(out, _encode(out[-1].is_dir, out[-1].path))
        out.append(entry)
    return Page(out)


def documents(
    repo: DocumentRepository, brain_id: str, *, limit: int, cursor: str | None = None
) -> Page[Document]:
    """One page of every live document of the brain, in path order (the legacy listing)."""
    _check_limit(limit)
    scan = _Scan(repo, brain_id, "", read=min(limit + 1, MAX_READ))
    if cursor is not None:
        kind, path = _decode(cursor)
        if kind != "f":
            raise _bad_cursor()
        scan.resume_after(path, subtree=False)
    out: list[Document] = []
    while (doc := scan.next()) is not None:
        if len(out) == limit:
            return Page(out, _encode(False, out[-1].path))
        out.append(doc)
    return Page(out)


class _Scan:
    """Live documents under a prefix in path order, read a bounded query at a time."""

    def __init__(self, repo: DocumentRepository, brain_id: str, prefix: str, *, read: int) -> None:
        self.repo = repo
        self.brain_id = brain_id
        self.prefix = prefix
        self.read = read
        self.after: str | None = None
        self.exhausted = False
        self.buffer: deque[Document] = deque()
        self.skipping: str | None = None

    def resume_after(self, path: str, *, subtree: bool) -> None:
        self.after = path
        if subtree:
            self.skip(path)

    def next(self) -> Document | None:
        while True:
            while self.buffer:
                doc = self.buffer.popleft()
                if self.skipping is not None and doc.path.startswith(self.skipping):
                    continue
                if doc.deleted_at is None:
                    return doc
            if self.exhausted:
                return None
            docs, self.after = self.repo.page(self.brain_id, self.prefix, after=self.after, limit=self.read)
            self.exhausted = self.after is None
            self.buffer.extend(docs)
            self.read = min(self.read * 2, MAX_READ)

    def skip(self, directory: str) -> None:
        """Pass over everything beneath `directory`: the records already read, then with one jump."""
        self.skipping = directory + "/"
        while self.buffer and self.buffer[0].path.startswith(self.skipping):
            self.buffer.popleft()
        if not self.buffer and not self.exhausted:
            # `past` is exact for every path that fits a record key; `skipping` covers the rest.
            self.after = max(self.after or "", DocumentRepository.past(self.skipping))
            self.read = FIRST_READ


def _globbed(glob: str | None, entry: Entry) -> Entry | None:
    return entry if glob is None or glob_match(glob, posixpath.basename(entry.path)) else None


def _first_shown(repo: DocumentRepository, brain_id: str, directory: str) -> Document | None:
    """The first live document beneath `directory` that is not generated, if any."""
    scan = _Scan(repo, brain_id, f"{directory}/", read=FIRST_READ)
    while (doc := scan.next()) is not None:
        if not is_generated(doc.path):
            return doc
    return None


def _is_live_file(repo: DocumentRepository, brain_id: str, path: str) -> bool:
    doc = repo.get(brain_id, path)
    return doc is not None and doc.deleted_at is None


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput("limit must be a positive integer")


def encode_cursor(raw: str) -> str:
    """An opaque cursor: unpadded base64url of `raw`."""
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str | None:
    """What `encode_cursor` encoded, or None for anything it could not have made."""
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return raw if encode_cursor(raw) == cursor else None


def _encode(is_dir: bool, path: str) -> str:
    return encode_cursor(("d" if is_dir else "f") + path)


def _decode(cursor: str) -> tuple[str, str]:
    """(kind, path) of a cursor this module made; InvalidInput for anything else."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
        raise _bad_cursor()
    raw = decode_cursor(cursor)
    if raw is None or raw[:1] not in ("f", "d"):
        raise _bad_cursor()
    try:
        return raw[:1], validate_path(raw[1:])
    except InvalidInput:
        raise _bad_cursor() from None


def _bad_cursor() -> InvalidInput:
    return InvalidInput("cursor is not one this listing handed out: start again without it")
