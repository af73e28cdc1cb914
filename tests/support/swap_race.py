"""A directory under a root that a thread keeps swapping (by rename) for a symlink to an outside
directory holding a file of the same name: the race that must never let a reader out of the root."""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

INSIDE = b"inside"
OUTSIDE = b"OUTSIDE SECRET"


def lay_out(root: Path, outside: Path) -> None:
    """`root/real/f.txt` (inside) and `root/evil` -> `outside/` holding `f.txt` (the secret);
    readers read `root/d/f.txt`, the name the swapper keeps renaming both to."""
    (root / "real").mkdir(parents=True)
    (root / "real" / "f.txt").write_bytes(INSIDE)
    outside.mkdir()
    (outside / "f.txt").write_bytes(OUTSIDE)
    (root / "evil").symlink_to(outside, target_is_directory=True)


@contextmanager
def swapping(root: Path, outcomes: Counter[str]) -> Iterator[None]:
    """A thread renames `real` and `evil` in and out of the name `d` until the block ends,
    counting rounds in `outcomes["swaps"]`."""
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for parked in ("real", "evil"):
                os.rename(root / parked, root / "d")
                os.rename(root / "d", root / parked)
            outcomes["swaps"] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the two threads finely
    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        sys.setswitchinterval(interval)
