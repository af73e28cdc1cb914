"""The recent siblings' races (tests/unit/services/test_siblings_races.py) on DynamoDB, S3 and
OpenSearch (moto): each container another Lambda instance over the same table, bucket and index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from tests.support.aws_stack import aws_stack
from tests.unit.services.test_siblings_races import (
    test_a_sibling_another_process_writes_meanwhile_keeps_its_entry,
    test_a_sibling_that_lands_before_the_write_repoints_it,
)

__all__ = [
    "test_a_sibling_another_process_writes_meanwhile_keeps_its_entry",
    "test_a_sibling_that_lands_before_the_write_repoints_it",
]


@pytest.fixture
def process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], Container]]:
    with aws_stack(tmp_path, monkeypatch, key_name="siblings") as stack:
        yield stack.process
