"""Directory entries that survive a power loss: a file created or renamed into a directory, or a
directory made, is on disk only once its parent directory is fsynced (tests/crash/test_power_cut.py
cuts the power between the two). And what the disk refuses, said as the core's errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cairn.domain.errors import storage_failure


def fsync_directory(path: Path) -> None:
    """Make what was created (or renamed) in the directory durable; a no-op where directories
    cannot be opened (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_directories(path: Path) -> None:
    """`mkdir -p`, each directory it makes durable in its parent before anything goes into it."""
    missing: list[Path] = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # another writer made it (and syncs it)
        fsync_directory(directory.parent)


@contextmanager
def storage_errors() -> Iterator[None]:
    """A full disk or a damaged database raised as what it means to a caller (StorageFull,
    DamagedStore: domain/errors.py `storage_failure`), in place of the OSError or sqlite3 error,
    so that every surface and the job runner see a CairnError; anything else passes unchanged."""
    try:
        yield
    except Exception as exc:
        known = storage_failure(exc)
        if known is None or known is exc:
            raise
        raise known from exc
