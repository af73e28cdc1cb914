"""What the fuzz tests share: how many examples they draw (CAIRN_FUZZ_EXAMPLES, 15 a tool, route or
path by default, more for a longer hunt), Hypothesis settings that draw the same examples on every
run, the ERROR records a server logged while one example ran, and the HTTP world a fuzz aims at."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("CAIRN_FUZZ_EXAMPLES", "15"))


def fixed(examples: int) -> settings:
    """`examples` drawn from a seed fixed by the test's source, so a run repeats the last; the first
    failure is the one reported."""
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )


class ErrorLog(logging.Handler):
    """The ERROR records logged (with the exception they carry), cleared before each example."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        said = f"{record.name}: {record.getMessage()}"
        self.seen.append(f"{said}: {record.exc_info[1]!r}" if record.exc_info else said)


@contextmanager
def errors_logged(*loggers: str) -> Iterator[ErrorLog]:
    """An ErrorLog on the named loggers (`cairn` when none is named) while the block runs."""
    handler = ErrorLog()
    attached = [logging.getLogger(name) for name in loggers or ("cairn",)]
    for logger in attached:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in attached:
            logger.removeHandler(handler)


@dataclass(frozen=True)
class HttpWorld:
    client: TestClient
    words: tuple[str, ...]
    """Ids, names and slugs that exist, tried wherever one goes."""
