"""A process that seeds a data directory and erases a user there, stopping dead half-way through a
brain so the test can kill -9 it (test_resume.py): `python -m tests.integration.erasure.erase_child DIR`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.documents.service import DocumentService
from cairn.services.erasure.log import ErasureLog
from cairn.services.thoughtmcp.models import NewMemory

MEMORIES_PER_BRAIN = 60
STOP_AFTER = 25  # documents erased before this process hangs, waiting for its kill


def main(data: Path) -> None:
    c = build_container(Settings(data_dir=data))
    for slug in ("first", "second"):
        brain = c.brains.create(slug.title(), slug=slug)
        for n in range(MEMORIES_PER_BRAIN):
            text = f"Victor's victormark memory {n} in {slug}: the locker code is {1000 + n}."
            c.thoughts.remember(brain, NewMemory(text, "victor", "s1", "semantic"))
            c.thoughts.remember(
                brain, NewMemory(f"Wanda's note {n} in {slug} stays.", "wanda", "s1", "semantic")
            )
    started = ErasureLog.start
    erase = DocumentService.erase
    erased = 0

    def announce(self: ErasureLog, receipt, subject):  # type: ignore[no-untyped-def]
        pending = started(self, receipt, subject)
        print(f"ERASURE {receipt.id}", flush=True)
        return pending

    def stall(self: DocumentService, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal erased
        erased += 1
        if erased > STOP_AFTER:
            print("STALLED", flush=True)
            time.sleep(600)
        return erase(self, *args, **kwargs)

    ErasureLog.start = announce  # type: ignore[method-assign]
    DocumentService.erase = stall  # type: ignore[method-assign]
    c.erasure.erase("thoughtmcp_user", "victor")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
