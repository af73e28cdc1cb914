"""The brains whose chunk index is being rebuilt (services/documents/index_repair.py): every search consults
this first (services/documents/visible_chunks.py) and is refused for such a brain with a 503 and Retry-After,
since an index being rebuilt would answer wrong; /healthz reports them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from cairn.domain.errors import Unavailable

MIN_RETRY_S = 2
MAX_RETRY_S = 300


@dataclass
class Progress:
    """A brain being repaired: how many documents, how many done, since when. `checking`: its
    index is still being compared with its records after a start (services/documents/index_repair.py),
    so whether it needs rebuilding is not known yet."""

    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    checking: bool = False
    tenant: str | None = None
    """The brain's owner tenant (None: not known), for /healthz to name only the caller's brains."""

    def retry_after_s(self) -> int:
        if self.checking:
            return MIN_RETRY_S * 2
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if self.done and elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate else float(MIN_RETRY_S * 5)
        return int(min(MAX_RETRY_S, max(MIN_RETRY_S, left)))


class Rebuilding(Unavailable):
    def __init__(self, progress: Progress) -> None:
        retry = progress.retry_after_s()
        super().__init__(
            f"this brain's search index is being checked against its documents since the server "
            f"started; retry in {retry} s"
            if progress.checking
            else f"this brain's search index is being rebuilt from its documents ({progress.done} of "
            f"{progress.total} done); retry in {retry} s",
            retry_after_s=retry,
        )


class RebuildingBrains:
    """The brains whose index is being rebuilt now: what every search consults first
    (services/documents/visible_chunks.py) and what /healthz reports."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._progress: dict[str, Progress] = {}

    def guard(self, brain_ids: Iterable[str]) -> None:
        """Refuse a search of a brain being rebuilt (Rebuilding: a 503 with Retry-After)."""
        for brain_id in brain_ids:
            progress = self._progress.get(brain_id)
            if progress is not None:
                raise Rebuilding(progress)

    def now(self) -> dict[str, Progress]:
        with self._lock:
            return dict(self._progress)

    def mark(self, brain_id: str, progress: Progress) -> None:
        with self._lock:
            self._progress[brain_id] = progress

    def unmark(self, brain_id: str) -> None:
        with self._lock:
            self._progress.pop(brain_id, None)
