"""Progress of the long commands (`cairn ingest`, `cairn import`) on stderr: a live bar on a
terminal; elsewhere (a log, a pipe, CI) whole lines, since a bar's carriage returns are noise
there and rich draws nothing at all."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

Show = Callable[[int, str], None]
"""How many are done, and what else to say (`12 chunks, 3.1 chunks/s`)."""


class Lines:
    """`<verb> 12/120 <unit>, <detail>` lines: one per tenth of the total, or sooner when
    `every_s` has passed since the last, and always the last one."""

    STEPS = 10

    def __init__(
        self,
        verb: str,
        unit: str,
        total: int | None,
        *,
        every_s: float = 5.0,
        out: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.verb, self.unit, self.total = verb, unit, total
        self.every_s = every_s
        self.out = out or sys.stderr
        self.clock = clock
        self.step = 0
        self.last = clock()

    def __call__(self, done: int, detail: str = "") -> None:
        step = done * self.STEPS // self.total if self.total else 0
        now = self.clock()
        if step == self.step and now - self.last < self.every_s and done != self.total:
            return
        self.step, self.last = step, now
        of = f"/{self.total}" if self.total is not None else ""
        print(
            f"{self.verb} {done}{of} {self.unit}" + (f", {detail}" if detail else ""),
            file=self.out,
            flush=True,
        )


@contextmanager
def shown(title: str, verb: str, unit: str, total: int | None) -> Iterator[Show]:
    """A bar titled `title` on a terminal, else `Lines`."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield Lines(verb, unit, total)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(f"{unit}, {{task.fields[detail]}}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(title, total=total, detail="")

        def show(done: int, detail: str = "") -> None:
            progress.update(task, completed=done, detail=detail)

        yield show
