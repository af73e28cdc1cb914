"""A power cut, simulated in the process that writes: what a disk keeps of Cairn's own files when
the power goes is each file's bytes as of its last fsync and each directory's entries as of its
last fsync; everything written after is lost.

`Disk` watches every fsync under a data directory (`os.fsync`, and `os.replace` to follow a
file renamed into place). At the n-th fsync, before it happens, it copies the directory as that
disk would have kept it, and raises InjectedFault there: the write in flight dies with the power.
SQLite's files are copied as they are, their shared-memory index dropped: SQLite syncs its WAL at
each commit (synchronous=FULL) and recovers a torn tail by its frame checksums, which SQLite's own
test suite proves; what this checks is the order between Cairn's files and those commits.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cairn.faults import InjectedFault

_fsync = os.fsync
_replace = os.replace


class Disk:
    def __init__(self, root: Path, copy: Path) -> None:
        self.root = root.resolve()
        self.copy = copy
        self.calls = 0
        self.cut_at: int | None = None  # the n-th fsync from `arm` on
        self.cut = False
        self._sizes: dict[Path, int] = {}
        self._entries: dict[Path, set[str]] = {}

    def arm(self, at: int | None) -> None:
        self.calls, self.cut_at = 0, at

    def fsync(self, fd: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if not path.is_relative_to(self.root):
            _fsync(fd)
            return
        self.calls += 1
        if not self.cut and self.calls == self.cut_at:
            self.cut = True
            self._keep()
            raise InjectedFault(f"power cut before fsync {self.calls} ({path.name})")
        _fsync(fd)
        if path.is_dir():
            self._entries[path] = set(os.listdir(path))
        else:
            self._sizes[path] = os.fstat(fd).st_size

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        _replace(src, dst)
        size = self._sizes.pop(Path(src).resolve(), None)
        if size is not None:
            self._sizes[Path(dst).resolve()] = size

    def _keep(self) -> None:
        shutil.copytree(self.root, self.copy)
        for kept in sorted(self.copy.rglob("*")):
            if not os.path.lexists(kept):
                continue  # under a directory already dropped
            original = self.root / kept.relative_to(self.copy)
            if ".sqlite3" in kept.name:  # SQLite's own files: see the module's docstring
                if kept.name.endswith("-shm"):
                    kept.unlink()
            elif original.name not in self._entries.get(original.parent, set()):
                # made or renamed into place after its directory's last fsync (or it never had one)
                shutil.rmtree(kept) if kept.is_dir() else kept.unlink()
            elif kept.is_file():
                with kept.open("r+b") as fh:
                    fh.truncate(min(self._sizes.get(original, 0), kept.stat().st_size))
