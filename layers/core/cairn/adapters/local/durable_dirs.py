"""Directory entries that survive a power loss: a file created or renamed into a directory, or a
directory made, is on disk only once its parent directory is fsynced (tests/crash/test_power_cut.py
cuts the power between the two)."""

from __future__ import annotations

import os
from pathlib import Path


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
