"""gbrain raw data (`brain_raw`): values JSON cannot hold are refused before anything is stored, and
concurrent overwrites of one source each land (the last wins), none told "already exists"."""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.services.gbrain.raw_data import RawDataExists
from tests.fakes.container import fake_container


@pytest.fixture
def c(tmp_path: Path) -> Container:
    c = fake_container(tmp_path)
    c.brains.create("Work", slug="work")
    return c


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_numbers_json_cannot_hold_are_refused(c: Container, value: float) -> None:
    brain = c.brains.get("work")
    with pytest.raises(InvalidInput, match="finite"):
        c.raw_data.put(brain, "doc_1", "crm", {"revenue": value})
    assert c.raw_data.get(brain, "doc_1", "crm") is None


def test_concurrent_overwrites_each_land_and_one_stays(c: Container) -> None:
    brain = c.brains.get("work")
    c.raw_data.put(brain, "doc_1", "crm", {"writer": -1})

    def overwrite(n: int) -> int:
        return c.raw_data.put(brain, "doc_1", "crm", {"writer": n}, overwrite=True).id

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(overwrite, range(8)))

    assert len(set(ids)) == 8
    row, value = c.raw_data.get(brain, "doc_1", "crm") or pytest.fail("no row")
    assert row.id in ids and value["writer"] in range(8)
    assert json.loads(c.adapters.blobs.get(row.blob_key)) == value
    with pytest.raises(RawDataExists):  # without overwrite, a held source is still refused
        c.raw_data.put(brain, "doc_1", "crm", {"writer": 9})
