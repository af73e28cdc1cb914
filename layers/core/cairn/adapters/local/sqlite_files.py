"""The embedded store's SQLite files as found on disk, before they are trusted: a database or
its log (`-wal`, `-shm`) that is not a regular file, a file SQLite cannot read as a database,
pages that no longer check (`PRAGMA quick_check`); and moving a damaged derived database aside.

Why a check before opening: SQLite opens a damaged file without complaint and fails only on the
page it cannot read, perhaps mid-request; and a log that is not a file makes SQLite open the
database read-only, so every write fails while every read works.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from cairn.adapters.local.durable_dirs import fsync_directory

LOG_SUFFIXES = ("-wal", "-shm", "-journal")
DAMAGED = ".damaged-"
_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def files_of(db_path: Path) -> list[Path]:
    """The database and the log files SQLite keeps beside it."""
    return [db_path, *(db_path.with_name(db_path.name + suffix) for suffix in LOG_SUFFIXES)]


def not_a_file(db_path: Path) -> Path | None:
    """A file of the database that is there and is not a regular file (a directory), else None:
    a cheap look, made every time the store is opened."""
    for path in files_of(db_path):
        if (path.exists() or path.is_symlink()) and not path.is_file():
            return path
    return None


def described(path: Path) -> str:
    return f"{path.name} is {'a directory' if path.is_dir() else 'not a regular file'}"


def is_damage(exc: BaseException) -> bool:
    """An error SQLite raises for a file it cannot use as a database (as against busy, full, …)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _DAMAGE_CODES


def damage(db_path: Path) -> str | None:
    """Why the database cannot be trusted, else None: a file of it that is not a file, or pages
    `PRAGMA quick_check` finds wrong (it reads every page: ~0.1 s per 30 MB from the page cache).
    A database that does not exist yet is not damaged."""
    odd = not_a_file(db_path)
    if odd is not None:
        return described(odd)
    if not db_path.exists():
        return None
    try:
        conn = sqlite3.connect(db_path, timeout=30.0, isolation_level=None)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        return str(exc)
    finally:
        conn.close()
    found = " ".join(" ".join(str(row[0]) for row in rows).replace("*** in database main ***", "").split())
    return None if found == "ok" else f"database disk image is malformed: {found}"


def move_aside(paths: Iterable[Path]) -> list[Path]:
    """Rename each path that exists (a file or a directory) to `<name>.damaged-<UTC time>` beside
    it, durably; returns the new names."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = []
    for path in paths:
        if not (path.exists() or path.is_symlink()):
            continue
        target = path.with_name(f"{path.name}{DAMAGED}{stamp}")
        path.rename(target)
        fsync_directory(target.parent)
        moved.append(target)
    return moved
