"""A PDF naming objects its cross-reference table misses is read without a search of the whole
file for each one (ingest/pdf_objects.py): pypdf searched once per object, so a 2 MB file naming
2,000 objects that do not exist took 10 s. What is read is what pypdf reads with its searches;
a file that makes it read its bytes over and over is refused: 1,000 numbers listed at one 2 MB
stream made 2 GB of copies."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pypdf._reader
import pytest
from pypdf import PdfReader

from cairn.domain.errors import UnsupportedContent
from cairn.ingest.pdf_objects import IndexedReader
from cairn.ingest.pdf_text import pdf_text
from tests.unit.ingest.pdfs import form_pdf, make_pdf, unlisted_objects_pdf


@pytest.fixture
def searched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The bytes each of pypdf's searches for an object's header read."""
    sizes: list[int] = []
    search = pypdf._reader.get_stream_data

    def counted(stream: object) -> bytes:
        data = search(stream)  # type: ignore[arg-type]
        sizes.append(len(data))
        return data

    monkeypatch.setattr(pypdf._reader, "get_stream_data", counted)
    yield sizes


@pytest.mark.parametrize(("missing", "misplaced"), [(500, 0), (0, 500), (250, 250)])
def test_objects_the_table_misses_cost_no_search_each(
    searched: list[int], missing: int, misplaced: int
) -> None:
    data = unlisted_objects_pdf(missing, misplaced, padding=2_000)
    text, _ = pdf_text(data, 100_000)
    assert text == "Page words"
    assert sum(searched) == 0  # before: one search of the whole file per object


def test_a_file_read_over_and_over_is_refused_as_damaged() -> None:
    data = unlisted_objects_pdf(missing=0, misplaced=300, padding=200_000)  # 60 MB of copies
    with pytest.raises(UnsupportedContent, match="reads its own bytes over and over"):
        pdf_text(data, 100_000)
    assert pdf_text(unlisted_objects_pdf(missing=0, misplaced=3, padding=200_000), 100_000)[0] == "Page words"


def test_an_object_only_a_search_finds_is_read(searched: list[int]) -> None:
    data = unlisted_objects_pdf(missing=3, found=4)
    text, _ = pdf_text(data, 100_000)
    assert text.split() == ["Page", "words", *[w for n in range(4) for w in ("Found", str(n))]]
    assert sum(searched) == 0


@pytest.mark.parametrize(
    "data",
    [
        unlisted_objects_pdf(missing=20, misplaced=20, found=5, padding=100),
        make_pdf([["Backups are kept 14 days."], ["Restores are tested monthly."]], title="Runbook"),
        form_pdf(draws=6, forms=3),
    ],
    ids=["unlisted", "plain", "forms"],
)
def test_every_object_reads_as_pypdf_reads_it_with_its_searches(data: bytes) -> None:
    ours, theirs = IndexedReader(data), PdfReader(io.BytesIO(data))
    for number in [*range(1, 40), *range(10_000, 10_020), *range(20_000, 20_020)]:
        mine, pypdfs = ours.get_object(number), theirs.get_object(number)
        assert repr(mine) == repr(pypdfs).replace(str(id(theirs)), str(id(ours))), number
    assert [p.extract_text() for p in ours.pages] == [p.extract_text() for p in theirs.pages]
