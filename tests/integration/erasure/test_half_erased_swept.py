"""A hard forget killed with kill -9 between removing its memory's bytes and its record leaves a
half-erased memory and the erase's mark (services/documents/writes.py ERASES); one sweep of the
next process finishes it (services/erasure/interrupted.py): record, row, chunks and mark gone, the
other memory whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.documents.index_sweeper import IndexSweeper
from cairn.services.documents.writes import ERASES
from cairn.services.erasure.interrupted import WRITERS_S
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.rows import rows_pk

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[3]


def test_a_forget_killed_between_its_bytes_and_its_record_is_finished_by_one_sweep(tmp_path: Path) -> None:
    data = tmp_path / "data"
    child = subprocess.run(
        [sys.executable, "-m", "tests.integration.erasure.forget_child", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CAIRN_FAULTS": "documents.bytes_erased"},
        timeout=300,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    memory_id = child.stdout.split("MEMORY ", 1)[1].split()[0]

    c = build_container(Settings(data_dir=data))
    brain = thought_brain(c.brains, None, create=False)
    assert c.documents.repo.get_by_id(memory_id) is not None  # half-erased: its record, no bytes
    assert [m.memory_id for m in c.pending_links.pending() if m.kind == ERASES] == [memory_id]

    c.pending_links.now = lambda: time.time() + WRITERS_S  # the sweep a minute later
    IndexSweeper(c.documents, settlers=[c.pending_links.settle]).tick()

    assert c.documents.repo.get_by_id(memory_id) is None
    assert c.adapters.chunks.get_chunks(brain.id, memory_id) == []
    assert c.adapters.records.get(rows_pk(brain.id, "victor"), memory_id) is None
    assert list(c.pending_links.pending()) == []
    (kept,) = c.documents.repo.list(brain.id)
    assert b"Wanda's note stays" in c.documents.read(brain, kept.path)
    assert c.adapters.chunks.get_chunks(brain.id, kept.id) != []
