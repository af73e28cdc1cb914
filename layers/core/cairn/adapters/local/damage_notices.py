"""Which brains' damage this process has told its repairers of, so that each damaged brain is told
once however many of its reads are refused meanwhile, and again only after it has been found
sound in between (repaired here, or by another process): a repair that leaves it damaged starts
no other. The keyword index (fts_damage.py) and the vector file (vector_health.py) keep one each."""

from __future__ import annotations

import threading


class DamageNotices:
    def __init__(self) -> None:
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def damaged(self, brain_id: str) -> bool:
        """The brain was found damaged: whether that is news to tell."""
        with self._lock:
            first = brain_id not in self._told
            self._told.add(brain_id)
        return first

    def sound(self, brain_id: str) -> None:
        """The brain was found sound (or is gone): its next damage is news again."""
        with self._lock:
            self._told.discard(brain_id)

    def __contains__(self, brain_id: str) -> bool:
        return brain_id in self._told
