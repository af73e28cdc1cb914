"""The embedded store's AuditSpill: one JSON line per entry in a file beside the databases.

Every call holds an exclusive lock on the file, so two processes on one data directory neither
interleave lines nor lose one appended while the other rewrites. A rewrite goes to a new file
renamed over the old one (fsynced first), so a stop midway leaves the old file whole; a process
that waited for the lock on the old file meanwhile opens the new one. A power cut mid-append leaves
a last line cut short: it is skipped (with a warning), as is any line that is not a JSON object
with an id. A spill path that is not a regular file (a directory, a symlink: never followed), or
one that cannot be read or written (an I/O error at any point of a call, a full disk) is refused
as Unavailable, the file left as it is (a rewrite cut short leaves the old file whole).
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from cairn.adapters.local.durable_dirs import fsync_directory
from cairn.domain.errors import Unavailable

log = logging.getLogger(__name__)

MAX_LINE = 1 << 20
"""Longer than any entry the audit writes (its values are clipped): a longer line is not one."""


class FileAuditSpill:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def append(self, entries: Sequence[Mapping[str, Any]]) -> None:
        if not entries:
            return
        lines = "".join(json.dumps(dict(e), separators=(",", ":")) + "\n" for e in entries).encode()
        created = not self.path.exists()
        with self._locked() as fd, self._failing():
            end = os.lseek(fd, 0, os.SEEK_END)
            if end:  # a line a cut-short append left unended is closed first, never joined
                os.lseek(fd, end - 1, os.SEEK_SET)
                if os.read(fd, 1) != b"\n":
                    lines = b"\n" + lines
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, lines)
            os.fsync(fd)
        if created:
            with self._failing():
                fsync_directory(self.path.parent)

    def read(self, limit: int) -> list[dict[str, Any]]:
        if not self.path.exists() and not self.path.is_symlink():
            return []
        with self._locked() as fd, self._failing(), os.fdopen(os.dup(fd), "rb") as file:
            entries: list[dict[str, Any]] = []
            skipped = 0
            for entry in _entries(file):
                if entry is None:
                    skipped += 1
                    continue
                entries.append(entry)
                if len(entries) == limit:
                    break
        _say_skipped(self.path, skipped)
        return entries

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        if not self.path.exists() and not self.path.is_symlink():
            return
        fresh = self.path.with_name(self.path.name + ".new")
        with self._locked() as fd, self._failing(), os.fdopen(os.dup(fd), "rb") as file:
            skipped = 0
            try:  # never through a link someone left at the new file's name
                with suppress(FileNotFoundError):
                    fresh.unlink()
                made = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except OSError as exc:
                raise _refused(fresh, exc) from exc
            try:
                with os.fdopen(made, "wb") as out:
                    for entry in _entries(file):
                        kept = change(entry) if entry is not None else None
                        skipped += entry is None
                        if kept is not None:
                            out.write(json.dumps(kept, separators=(",", ":")).encode() + b"\n")
                    out.flush()
                    os.fsync(out.fileno())
            except BaseException:
                with suppress(OSError):
                    fresh.unlink()
                raise
            os.replace(fresh, self.path)  # under the old file's lock: no append goes to it meanwhile
            fsync_directory(self.path.parent)
        _say_skipped(self.path, skipped)

    @contextmanager
    def _failing(self) -> Iterator[None]:
        """An I/O error meanwhile (a disk failing mid-read, a full disk) as Unavailable."""
        try:
            yield
        except OSError as exc:
            raise _refused(self.path, exc) from exc

    @contextmanager
    def _locked(self) -> Iterator[int]:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
            except OSError as exc:
                raise _refused(self.path, exc) from exc
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise _refused(self.path, OSError(errno.EINVAL, "not a regular file"))
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:  # else a rewrite replaced the file while this waited: open the new one
                    yield fd
                    return
            finally:
                os.close(fd)  # releases the lock


def _refused(path: Path, exc: OSError) -> Unavailable:
    reason = exc.strerror or type(exc).__name__
    return Unavailable(f"{path.name} (the audit entries kept across stops) cannot be used: {reason}")


def _entries(file: IO[bytes]) -> Iterator[dict[str, Any] | None]:
    """Each line's entry, None for a line that is not one (cut short, too long, not an object)."""
    while line := file.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := file.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        yield entry if isinstance(entry, dict) and isinstance(entry.get("id"), str) else None


def _say_skipped(path: Path, skipped: int) -> None:
    if skipped:
        log.warning("%s: %d audit entries cut short or unreadable were skipped", path, skipped)
