"""The CLI's progress lines without a terminal (cli/progress.py): one per tenth of the total, sooner
after a quiet while, always the last; no total, then by time alone."""

from __future__ import annotations

import io

from cairn.entrypoints.cli.progress import Lines


def test_a_line_per_tenth_and_the_last() -> None:
    out = io.StringIO()
    show = Lines("ingested", "files", 45, out=out, clock=lambda: 0.0)
    for n in range(1, 46):
        show(n, f"{n * 2} chunks")
    lines = out.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0] == "ingested 5/45 files, 10 chunks" and lines[-1] == "ingested 45/45 files, 90 chunks"


def test_a_quiet_while_brings_a_line_and_without_a_total_time_alone_does() -> None:
    now = [0.0]
    out = io.StringIO()
    show = Lines("imported", "records", None, every_s=5.0, out=out, clock=lambda: now[0])
    show(1)
    now[0] = 4.0
    show(2)
    now[0] = 9.5
    show(3)
    assert out.getvalue() == "imported 3 records\n"
