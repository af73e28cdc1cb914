"""Reading a store's files once at start-up, so that its first searches find them in memory.

After a restart (or anything that evicted them), a big brain's files are on disk only, and each
search faults in what it touches: at a million chunks memory_search over MCP took p50 / p95
28.9 / 44.3 ms cold against 18.5 / 21.6 ms once the files had been read through (the files, 4.9 GB,
read in 6.9 s; docs/PERFORMANCE.md). A hint to the kernel (`posix_fadvise(WILLNEED)`) is not
enough: on the file system this was measured on it read nothing, and macOS has no such call. So
the files are read, in blocks into one buffer, in the order a search needs them most, while they
fit in half of physical memory: the pages stay in the kernel's cache, which gives them back under
pressure; the process's own memory does not grow.

A SQLite database is never read that way while the process has it open: closing any descriptor of
a file drops every POSIX lock the process holds on it, SQLite's included, and another process
closing its last connection then believes itself the last user and deletes the -wal and -shm
files under the running server. `read_database` reads one through its own connection instead.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final

log = logging.getLogger(__name__)

BLOCK: Final = 1 << 20


def memory_budget() -> int:
    """Half of this machine's physical memory in bytes; 0 where the platform does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):
        return 0


def read_database(conn: sqlite3.Connection, budget: int) -> None:
    """Unless the database is over `budget` bytes, read every row of every ordinary table (an
    FTS5 index's shadow tables included) through the connection, each table in a statement of its
    own (no read transaction holds back checkpoints for the whole pass); `substr` loads every value
    whole, overflow pages too. Indexes are not read."""
    started = time.perf_counter()
    size = conn.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size").fetchone()
    if size[0] > budget:
        return
    tables = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
    ).fetchall()
    for (table,) in tables:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({_quoted(table)})")]
        values = " + ".join(f"coalesce(length(substr({_quoted(c)}, -1)), 0)" for c in columns) or "0"
        try:
            conn.execute(f"SELECT sum({values}) FROM {_quoted(table)}").fetchone()
        except sqlite3.OperationalError:  # dropped since (a compaction, a brain deleted)
            continue
    log.info("read a database through its connection in %.1f s", time.perf_counter() - started)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_through(paths: Iterable[Path], budget: int) -> int:
    """Read each regular file whole (up to the size it had when opened), in the order given,
    skipping one that would take the total past `budget` bytes (a later, smaller one may still
    fit), one that is missing or unreadable (a race with a compaction or a delete) and anything
    that is not a regular file (a device would never end). Returns the bytes read."""
    started = time.perf_counter()
    view = memoryview(bytearray(BLOCK))
    total = 0
    for path in paths:
        try:
            # Non-blocking: opening a FIFO for reading would wait for a writer.
            with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb", buffering=0) as f:
                status = os.fstat(f.fileno())
                if not stat.S_ISREG(status.st_mode) or total + status.st_size > budget:
                    continue
                left = status.st_size
                while left > 0 and (read := f.readinto(view[: min(BLOCK, left)])):
                    total += read
                    left -= read
        except OSError:
            continue
    if total:
        log.info("read %d MB of search files in %.1f s", total >> 20, time.perf_counter() - started)
    return total


def read_in(path: Path, probes: int = 64) -> None:
    """Read the file through the page cache unless it is there already (`resident`), while it
    fits in `memory_budget`: for a file about to be memory-mapped, whose first use would otherwise
    fault in each page it touches with a read of its own."""
    if not resident(path, probes):
        read_through([path], memory_budget())


def resident(path: Path, probes: int = 64) -> bool:
    """Whether the file is in the page cache, judged by `probes` bytes spread over it, each read
    only if that needs no disk (Linux's RWF_NOWAIT: a page not there is answered at once, its
    read merely started); False where that cannot be asked (the file is read then, as when it is
    not in the cache)."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
            return False
        byte = bytearray(1)
        last = status.st_size - 1
        for probe in range(probes):
            os.preadv(fd, [byte], last * probe // max(probes - 1, 1), nowait)
    except OSError:  # BlockingIOError: that page is on disk only; or RWF_NOWAIT not supported
        return False
    finally:
        os.close(fd)
    return True
