"""Reading a store's files once at start-up, so that its first searches find them in memory.

After a restart (or anything that evicted them), a big brain's files are on disk only, and each
search faults in what it touches: at a million chunks memory_search over MCP took p50 / p95
28.9 / 44.3 ms cold against 18.5 / 21.6 ms once the files had been read through (the files, 4.9 GB,
read in 6.9 s; docs/PERFORMANCE.md). A hint to the kernel (`posix_fadvise(WILLNEED)`) is not
enough: on the file system this was measured on it read nothing, and macOS has no such call. So
the files are read, in blocks into one buffer, in the order a search needs them most, while they
fit in half of physical memory: the pages stay in the kernel's cache, which gives them back under
pressure; the process's own memory does not grow.
"""

from __future__ import annotations

import logging
import os
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
