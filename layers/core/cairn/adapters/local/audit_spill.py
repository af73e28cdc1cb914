"""The embedded store's AuditSpill: one JSON line per entry in a file beside the databases.

Appends are one write each under an exclusive lock on the file, then fsynced; `take` reads and
empties the file under the same lock, so two processes on one data directory neither interleave
lines nor lose one appended while the other takes. A power cut mid-append leaves a last line
cut short: it is skipped (with a warning), as is any line that is not a JSON object.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cairn.adapters.local.durable_dirs import fsync_directory

log = logging.getLogger(__name__)


class FileAuditSpill:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def append(self, entries: Sequence[Mapping[str, Any]]) -> None:
        if not entries:
            return
        lines = "".join(json.dumps(dict(e), separators=(",", ":")) + "\n" for e in entries).encode()
        created = not self.path.exists()
        with self._locked() as fd:
            end = os.lseek(fd, 0, os.SEEK_END)
            if end:  # a line a cut-short append left unended is closed first, never joined
                os.lseek(fd, end - 1, os.SEEK_SET)
                if os.read(fd, 1) != b"\n":
                    lines = b"\n" + lines
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, lines)
            os.fsync(fd)
        if created:
            fsync_directory(self.path.parent)

    def take(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self._locked() as fd:
            os.lseek(fd, 0, os.SEEK_SET)
            chunks: list[bytes] = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            entries = _entries(b"".join(chunks), self.path)
            os.ftruncate(fd, 0)
            os.fsync(fd)
        return entries

    @contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # releases the lock


def _entries(data: bytes, path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    skipped = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            skipped += 1
    if skipped:
        log.warning("%s: %d audit entries cut short or unreadable were skipped", path, skipped)
    return entries
