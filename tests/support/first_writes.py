"""Racing first writes on a fresh store: each of n threads finds no brain before any is made."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from cairn.bootstrap import Container
from tests.support.shapes import fresh_store

T = TypeVar("T")

__all__ = ["RACES", "at_once", "fresh_store", "racing_creates"]

RACES = ("together", "in turn")
"""How the first writes' brain creates meet, once every writer has found no brain: `together`,
each choosing its slug before any brain is stored; `in turn`, one after the other, each choosing
its slug when the ones before it have stored theirs."""


@contextmanager
def racing_creates(c: Container, n: int, race: str) -> Iterator[None]:
    """Each of `n` threads' first brain create waits until all n have come to theirs (all of
    them looked for a brain and found none, as on a fresh server whose first writes arrive at
    once), then goes on as `race` says (RACES)."""
    barrier = threading.Barrier(n)
    in_turn = threading.Lock()
    owner: Any = c.brains if race == "in turn" else c.brains.repo
    create = owner.create
    waited: set[int] = set()

    def racing(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() not in waited:
            waited.add(threading.get_ident())
            barrier.wait(timeout=30)
        if race == "in turn":
            with in_turn:
                return create(*args, **kwargs)
        return create(*args, **kwargs)

    owner.create = racing
    try:
        yield
    finally:
        del owner.create


def at_once(n: int, work: Callable[[int], T]) -> list[T | Exception]:
    """`work(0)` .. `work(n - 1)`, each in its own thread, started together; each answer or error."""
    answers: list[T | Exception] = [RuntimeError("never ran")] * n

    def run(i: int) -> None:
        try:
            answers[i] = work(i)
        except Exception as exc:  # what a surface would answer with
            answers[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers
