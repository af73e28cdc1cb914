"""A process that remembers a ThoughtMCP memory beside another and hard-forgets the first, for a
test to kill at a fault point (CAIRN_FAULTS): `python -m tests.integration.erasure.forget_child DIR`."""

from __future__ import annotations

import sys
from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.models import NewMemory


def main(data: Path) -> None:
    c = build_container(Settings(data_dir=data))
    brain = thought_brain(c.brains, None, create=True)
    kept = NewMemory("Wanda's note stays: the harbour gate opens at seven.", "wanda", "s1", "semantic")
    c.thoughts.remember(brain, kept)
    doomed = NewMemory("Victor's victormark memory: the locker code is 4711.", "victor", "s1", "semantic")
    memory_id = c.thoughts.remember(brain, doomed)["memoryId"]
    print(f"MEMORY {memory_id}", flush=True)
    c.thoughts.forget(brain, memory_id, "victor")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
