"""An embedded store built once for a module and copied for each test that damages or changes it:
the copy is the store as its last process left it (every connection closed, no -wal file)."""

from __future__ import annotations

import gc
import shutil
import sqlite3
from pathlib import Path


def closed(data: Path) -> Path:
    """The store's connections this process left open are closed (collected, as a `cairn`
    process's are when it exits) and each database's log checkpointed into its file: a copy then
    opens each database file alone (SQLite takes a database's size from a -wal left beside it
    instead of checking the file's)."""
    gc.collect()
    for db in sorted(data.glob("*.sqlite3")):
        conn = sqlite3.connect(db)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    return data


def copied(template: Path, into: Path) -> Path:
    """A copy of a `closed` store at `into` (a path that does not exist yet)."""
    shutil.copytree(template, into)
    return into
