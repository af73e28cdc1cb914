"""The archive's races (tests/unit/services/test_archive_races.py) on DynamoDB, S3 and OpenSearch
(moto): each container another Lambda instance over the same table, bucket and index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from tests.support.aws_stack import aws_stack
from tests.unit.services.test_archive_races import (
    test_a_document_renamed_while_the_export_pages_through_the_brain_is_held_once,
    test_a_raw_row_stored_between_the_restores_check_and_its_write_is_kept,
    test_a_write_committed_between_the_restores_check_and_its_write_is_kept,
)

__all__ = [
    "test_a_document_renamed_while_the_export_pages_through_the_brain_is_held_once",
    "test_a_raw_row_stored_between_the_restores_check_and_its_write_is_kept",
    "test_a_write_committed_between_the_restores_check_and_its_write_is_kept",
]


@pytest.fixture
def process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], Container]]:
    with aws_stack(tmp_path, monkeypatch, key_name="archive") as stack:
        yield stack.process
