"""Which library-type profile (ingest/profiles.py) a brain's documents are cut with: its type's.

A brain's type is read from its record at most once per TTL_S per process, so a document write
does not add a read; a type changed meanwhile applies to what is written afterwards (documents
already indexed keep their chunks until they are written again). A brain without a type cuts as
every document always did.
"""

from __future__ import annotations

import threading
import time
from typing import Final

from cairn.domain.libraries import library_type_of
from cairn.ingest.profiles import LibraryProfile, profile_for
from cairn.services.repositories import BrainRepository

TTL_S: Final = 30.0


class LibraryProfiles:
    def __init__(self, brains: BrainRepository, ttl_s: float = TTL_S) -> None:
        self.brains = brains
        self.ttl_s = ttl_s
        self._known: dict[str, tuple[float, LibraryProfile | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, brain_id: str) -> LibraryProfile | None:
        now = time.monotonic()
        with self._lock:
            held = self._known.get(brain_id)
        if held is not None and now - held[0] < self.ttl_s:
            return held[1]
        brain = self.brains.get(brain_id)
        kind = library_type_of(brain.metadata) if brain is not None else None
        profile = profile_for(kind) if kind is not None else None
        with self._lock:
            self._known[brain_id] = (now, profile)
        return profile
