"""The embedded index's own files, damaged every way a disk, a crash or a person can: a vector file
short by a row or a partial row, emptied, deleted, or with garbage in the middle; an ANN index
truncated, emptied, with a garbage header, or deleted. Whatever the damage, no search raises
anything but IndexDamaged (a 503), no search reads a damaged row, a damaged ANN index is passed
over for exact search, and once the unsound chunks are discarded and written again the index
answers as it did before."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_compaction import VectorMaintenance
from cairn.adapters.local.vector_health import IndexDamaged
from cairn.adapters.local.vector_sums import PIECE_ROWS
from cairn.domain.errors import DamagedStore, Unavailable
from cairn.domain.models import Chunk
from cairn.ports.chunks import (
    ANN_NONE,
    ANN_OK,
    ANN_REBUILDING,
    CheckStopped,
    ChunkFilter,
    ChunkIndex,
    ChunkQuery,
)
from tests.contract.test_chunk_index_contract import chunk

DIM = 16
ROW = 4 * DIM
ROWS = 60


def vectors(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def chunks(n: int) -> list[Chunk]:
    """One chunk per document; the even ones carry index-only context (a sibling's excerpt)."""
    return [
        chunk(
            f"c{i}",
            f"heron {i} wades the estuary at dawn",
            document_id=f"d{i}",
            context=f"before it: note {i - 1}" if i % 2 == 0 else "",
        )
        for i in range(n)
    ]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "chunks.sqlite3", tmp_path / "vectors"


def opened(files: tuple[Path, Path], **options: int) -> SqliteChunkIndex:
    return SqliteChunkIndex(files[0], files[1], DIM, background_maintenance=False, **options)  # type: ignore[arg-type]


@pytest.fixture
def written(files: tuple[Path, Path]) -> Iterator[np.ndarray]:
    """A brain of ROWS chunks, one upsert per ten (so the sums grow commit by commit)."""
    index = opened(files)
    matrix = vectors(ROWS)
    for first in range(0, ROWS, 10):
        index.upsert(chunks(ROWS)[first : first + 10], matrix[first : first + 10])
    index.close()
    yield matrix


def top(index: ChunkIndex, vector: np.ndarray, k: int = 5) -> list[str]:
    query = ChunkQuery(text="", vector=vector.tolist(), filter=ChunkFilter(brain_ids=("b1",)), top_k=k)
    return [h.chunk.id for h in index.search(query)]


def damage_truncate(rows: float) -> Callable[[Path], None]:
    def cut(path: Path) -> None:
        with path.open("r+b") as fh:
            fh.truncate(max(0, path.stat().st_size - int(rows * ROW)))

    return cut


def damage_garbage(row: int) -> Callable[[Path], None]:
    def scribble(path: Path) -> None:
        with path.open("r+b") as fh:
            fh.seek(row * ROW + 8)
            fh.write(b"\x7f" * 24)

    return scribble


LAST_COMMIT = {f"c{i}" for i in range(50, 60)}  # the fixture writes ten rows a commit: one sum each
VECTOR_DAMAGE: dict[str, tuple[Callable[[Path], None], set[str]]] = {
    "short by one row": (damage_truncate(1), LAST_COMMIT),
    "short by a partial row": (damage_truncate(0.5), LAST_COMMIT),
    "short by a whole commit": (damage_truncate(10), LAST_COMMIT),
    "garbage in the middle": (damage_garbage(23), {f"c{i}" for i in range(20, 30)}),
    "emptied": (damage_truncate(ROWS), {f"c{i}" for i in range(ROWS)}),
    "deleted": (lambda path: path.unlink(), {f"c{i}" for i in range(ROWS)}),
    "a directory in its place": (lambda path: (path.unlink(), path.mkdir()), {f"c{i}" for i in range(ROWS)}),
}


@pytest.mark.parametrize("case", sorted(VECTOR_DAMAGE))
def test_a_damaged_vector_file_is_never_read_and_is_rebuilt(
    files: tuple[Path, Path], written: np.ndarray, case: str
) -> None:
    damage, lost = VECTOR_DAMAGE[case]
    before = [top(opened(files), written[i]) for i in (3, 40, 59)]
    damage(files[1] / "b1.f32")
    index = opened(files)  # a restart on the damaged files
    check = index.check("b1")
    assert check.unsound_chunks == len(lost)
    with pytest.raises(IndexDamaged) as refused:
        top(index, written[3])
    assert isinstance(refused.value, Unavailable) and refused.value.retry_after_s > 0
    text = ChunkQuery(text="heron estuary", vector=None, filter=ChunkFilter(brain_ids=("b1",)))
    assert len(index.search(text)) == 10  # the full-text leg reads no vector: it still answers
    assert index.get_vectors("b1", sorted(lost)) == {}  # a damaged vector is never lent to a rewrite
    # The repair: the unsound chunks go, and are written again (as their documents' reconcile does)
    removed = index.discard_unsound("b1")
    assert {cid for gone in removed.values() for cid in gone.chunk_ids} == lost
    # what a rebuild needs to write them as they were: the context each first chunk carried
    assert {doc: gone.context for doc, gone in removed.items()} == {
        f"d{cid[1:]}": f"before it: note {int(cid[1:]) - 1}" if int(cid[1:]) % 2 == 0 else "" for cid in lost
    }
    order = sorted(lost, key=lambda cid: int(cid[1:]))
    positions = [int(cid[1:]) for cid in order]
    index.upsert([chunks(ROWS)[i] for i in positions], written[positions])
    assert index.check("b1").unsound_chunks == 0
    assert [top(index, written[i]) for i in (3, 40, 59)] == before
    index.close()
    assert opened(files).check("b1").unsound_chunks == 0  # and it stays sound across a restart


def test_rows_appended_after_a_loss_never_take_a_lost_rows_number(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    damage_truncate(3)(files[1] / "b1.f32")
    index = opened(files)  # not checked yet: the write itself finds the file short
    extra = vectors(2, seed=9)
    index.upsert([chunk("n0", "new one", document_id="n0"), chunk("n1", "new two", document_id="n1")], extra)
    assert index.check("b1").unsound_chunks == len(LAST_COMMIT)
    assert set(index.discard_unsound("b1")) == {f"d{i}" for i in range(50, 60)}
    # The new rows sit past the rows the lost chunks pointed at: their vectors are theirs alone
    assert top(index, extra[0], 1) == ["n0"] and top(index, extra[1], 1) == ["n1"]
    assert top(index, written[3], 1) == ["c3"]


def test_damage_found_while_serving_tells_the_listeners(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    index = opened(files)
    told: list[str] = []
    index.on_damage(told.append)
    assert top(index, written[0])  # sound: checked once, nothing said
    assert told == []
    damage_truncate(1)(files[1] / "b1.f32")
    index.upsert([chunk("late", "a late heron", document_id="late")], vectors(1, seed=3))
    assert told == ["b1"]  # the write found the file short of what its sums cover
    with pytest.raises(IndexDamaged):
        top(index, written[0])


def test_vector_damage_is_reported_once_until_the_brain_is_found_sound_again(
    files: tuple[Path, Path], written: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    """Every refused search of a damaged brain does not log it again nor ask for another repair;
    damage found after the brain was repaired (by another process, or by this one) is reported
    again."""

    def reported() -> int:
        return sum("is damaged" in r.getMessage() for r in caplog.records if r.name.endswith("vector_health"))

    def refused(times: int) -> None:
        for _ in range(times):
            with pytest.raises(IndexDamaged):
                top(index, written[3])

    def repaired(by: SqliteChunkIndex) -> None:
        positions = sorted(int(doc[1:]) for doc in by.discard_unsound("b1"))
        by.upsert([chunks(ROWS)[i] for i in positions], written[positions])

    index = opened(files)
    told: list[str] = []
    index.on_damage(told.append)
    damage_garbage(23)(files[1] / "b1.f32")
    refused(3)
    assert index.check("b1").unsound_chunks == 10  # a check finds what was already reported
    assert (told, reported()) == (["b1"], 1)
    repaired(opened(files))  # by another process: this one's next search finds the brain sound
    assert top(index, written[23], 1) == ["c23"]
    damage_garbage(ROWS + 2)(files[1] / "b1.f32")  # the row c22 was written to again
    assert index.check("b1").unsound_chunks == 10
    refused(2)
    assert (told, reported()) == (["b1", "b1"], 2)
    repaired(index)
    damage_garbage(ROWS + 12)(files[1] / "b1.f32")
    assert index.check("b1").unsound_chunks == 10
    refused(2)
    assert (told, reported()) == (["b1", "b1", "b1"], 3)


def test_a_check_its_process_stops_records_nothing_as_verified(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    """A check (or the warm-up's) that a stop ends while it reads the file raises CheckStopped
    and records nothing: the next check reads the whole file and finds what the stopped one did
    not reach."""
    index = opened(files)
    damage_garbage(53)(files[1] / "b1.f32")  # in the last piece
    asked: list[bool] = []

    def stop() -> bool:
        asked.append(True)
        return len(asked) > 2

    with pytest.raises(CheckStopped):
        index.check("b1", stop=stop)
    index.warm(stop=lambda: True)  # ends at once, nothing raised
    assert index.check("b1", reread=False).unsound_chunks == 10


def test_damage_only_in_rows_no_chunk_uses_refuses_nothing_and_blocks_no_compaction(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    """Rows left dead by deletes are still in the file until a compaction: damage found only there
    harms no search, and there is no chunk to discard, so the check takes the file as it is."""
    index = opened(files)
    index.delete_chunks("b1", [f"c{i}" for i in range(20, 30)])  # the whole piece of rows 20-29
    before = [top(index, written[i]) for i in (3, 40, 59)]
    index.close()
    damage_garbage(23)(files[1] / "b1.f32")
    index = opened(files)
    told: list[str] = []
    index.on_damage(told.append)
    assert index.check("b1").unsound_chunks == 0
    assert [top(index, written[i]) for i in (3, 40, 59)] == before  # not refused
    assert told == []
    done = index.compact("b1")
    assert done is not None and (done.epoch, done.live_rows) == (1, ROWS - 10)
    assert index.check("b1").unsound_chunks == 0
    assert [top(index, written[i]) for i in (3, 40, 59)] == before


def test_a_sound_brain_checks_sound_and_an_unknown_one_is_none(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    index = opened(files)
    check = index.check("b1")
    assert (check.vector_rows, check.unsound_chunks, check.ann) == (ROWS, 0, ANN_NONE)
    assert index.check("nobody").vector_rows == 0


def test_sums_cover_more_than_one_segment(files: tuple[Path, Path]) -> None:
    index = opened(files)
    many = PIECE_ROWS + 50
    index.upsert(
        [chunk(f"m{i}", f"marsh {i}", document_id=f"m{i}") for i in range(many)], vectors(many, seed=4)
    )
    index.close()
    damage_garbage(PIECE_ROWS + 10)(files[1] / "b1.f32")
    index = opened(files)
    assert index.check("b1").unsound_chunks == 50  # only the second piece's rows


def test_compaction_refuses_a_damaged_row_instead_of_copying_it_under_a_fresh_sum(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    """A live row whose bytes changed since they were summed is not carried into the next epoch
    (where a sum computed from the changed bytes would hide it for good): compaction stops with
    the old epoch in place and the brain recorded as damaged, and once repaired it compacts."""
    index = opened(files)
    index.delete_chunks("b1", ["c0", "c1"])  # dead rows: compaction rewrites the file
    before = [top(index, written[i]) for i in (3, 40, 59)]
    index.close()
    damage_garbage(23)(files[1] / "b1.f32")
    index = opened(files)
    told: list[str] = []
    index.on_damage(told.append)
    assert index.compact("b1") is None
    assert told == ["b1"]  # reported as a search or a check would: the server repairs it
    assert sorted(path.name for path in files[1].glob("b1*.f32")) == ["b1.f32"]  # the old epoch kept
    with pytest.raises(IndexDamaged):
        top(index, written[3])
    damaged = {f"c{i}" for i in range(20, 30)}
    assert index.check("b1").unsound_chunks == len(damaged)
    removed = index.discard_unsound("b1")
    assert {cid for gone in removed.values() for cid in gone.chunk_ids} == damaged
    positions = list(range(20, 30))
    index.upsert([chunks(ROWS)[i] for i in positions], written[positions])
    done = index.compact("b1")
    assert done is not None and done.epoch == 1 and done.live_rows == ROWS - 2
    assert index.check("b1").unsound_chunks == 0
    assert [top(index, written[i]) for i in (3, 40, 59)] == before


def test_a_scrub_that_meets_a_damaged_vector_file_says_so(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    """An erasure's scrub compacts the brain's vectors, which a damaged row refuses: the scrub says
    the file is damaged and how to repair it, the first time and once the damage is recorded."""
    index = opened(files)
    index.delete_chunks("b1", ["c0", "c1"])  # dead rows: the compaction rewrites the file
    index.close()
    damage_garbage(23)(files[1] / "b1.f32")
    index = opened(files)
    for _ in range(2):
        with pytest.raises(DamagedStore, match=r"vector file is damaged.*`cairn check`"):
            index.scrub("b1")
    assert sorted(path.name for path in files[1].glob("b1*.f32")) == ["b1.f32"]  # the old epoch kept
    index.close()


def test_rows_written_during_a_compaction_are_checked_before_the_switch_carries_them(
    files: tuple[Path, Path], written: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows written between the copy and the switch are carried over by the switch: one of
    them damaged meanwhile stops it as well, the old epoch answering as before (but refused)."""
    index = opened(files)
    index.delete_chunks("b1", ["c0", "c1"])
    real = VectorMaintenance._copy
    late = vectors(5, seed=7)

    def copy_then_write(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        index.upsert([chunk(f"n{i}", f"late heron {i}", document_id=f"n{i}") for i in range(5)], late)
        damage_garbage(ROWS + 2)(files[1] / "b1.f32")

    monkeypatch.setattr(VectorMaintenance, "_copy", staticmethod(copy_then_write))
    told: list[str] = []
    index.on_damage(told.append)
    assert index.compact("b1") is None
    assert told == ["b1"]
    assert sorted(path.name for path in files[1].glob("b1*.f32")) == ["b1.f32"]
    assert index.check("b1").unsound_chunks == 5  # the late commit's piece


ANN_DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "emptied": lambda path: path.write_bytes(b""),
    "garbage header": lambda path: path.write_bytes(b"\x00garbage" * 8 + path.read_bytes()[64:]),
    "one byte changed": lambda path: path.write_bytes(
        (data := bytearray(path.read_bytes())) and bytes(data[:-100] + bytes([data[-100] ^ 1]) + data[-99:])
    ),
    "deleted": lambda path: path.unlink(),
}


@pytest.mark.parametrize("case", sorted(ANN_DAMAGE))
def test_a_damaged_ann_index_is_passed_over_for_exact_search_and_rebuilt(
    files: tuple[Path, Path], written: np.ndarray, case: str
) -> None:
    pytest.importorskip("faiss")
    options = {"ann_min_rows": 40, "exact_max_rows": 5}
    index = opened(files, **options)
    assert index.compact("b1") is not None and index.check("b1").ann == ANN_OK
    before = [top(index, written[i]) for i in range(0, ROWS, 7)]
    index.close()
    ANN_DAMAGE[case](files[1] / "b1.faiss")
    index = opened(files, **options)
    assert [top(index, written[i]) for i in range(0, ROWS, 7)] == before  # exact: the same answers
    assert index.check("b1").ann == ANN_REBUILDING
    assert index.compact("b1") is not None
    assert index.check("b1").ann == ANN_OK
    assert [top(index, written[i]) for i in range(0, ROWS, 7)] == before


def test_a_sum_whose_size_overflows_passes_the_index_over(
    files: tuple[Path, Path], written: np.ndarray
) -> None:
    pytest.importorskip("faiss")
    options = {"ann_min_rows": 40, "exact_max_rows": 5}
    index = opened(files, **options)
    assert index.compact("b1") is not None
    before = [top(index, written[i]) for i in range(0, ROWS, 7)]
    index.close()
    summed = files[1] / "b1.faiss.sum"
    summed.write_text(summed.read_text().replace('"bytes": ', '"bytes": 1e999', 1).replace("1e999 ", "1e999"))
    assert "1e999" in summed.read_text()
    index = opened(files, **options)  # a number too large for an int: not a crash at start
    assert [top(index, written[i]) for i in range(0, ROWS, 7)] == before
    assert index.check("b1").ann == ANN_REBUILDING


CUT_UNDER_A_RUNNING_INDEX = """
import sys
from pathlib import Path
import numpy as np
from tests.contract.test_chunk_files import opened, vectors, top, ROW, DIM
from tests.contract.test_chunk_index_contract import chunk
from cairn.adapters.local.vector_health import IndexDamaged

files = (Path(sys.argv[1]) / "chunks.sqlite3", Path(sys.argv[1]) / "vectors")
rows, what = int(sys.argv[2]), sys.argv[3]
options = {"ann_min_rows": 40, "exact_max_rows": 5} if what == "ann" else {}
index = opened(files, **options)
matrix = vectors(rows, seed=5)
index.upsert([chunk(f"c{i}", f"egret {i}", document_id=f"d{i}") for i in range(rows)], matrix)
if what == "ann":
    assert index.compact("b1") is not None
told = []
index.on_damage(told.append)
before = top(index, matrix[7])
cut = files[1] / ("b1.faiss" if what == "ann" else "b1.f32")
with cut.open("r+b") as fh:  # in place, as `truncate` or a failing disk would
    fh.truncate(cut.stat().st_size // 3)
try:
    after = top(index, matrix[7])
except IndexDamaged:
    print("refused", told)
else:
    print("answered", after == before, index.check("b1").ann)
"""


@pytest.mark.parametrize(
    ("rows", "what", "expected"),
    [
        (60, "vectors", "refused ['b1']"),  # candidates read with pread
        (2000, "vectors", "refused ['b1']"),  # a full scan of the mapping
        (2000, "ann", "answered True rebuilding"),
    ],
)
def test_a_file_cut_short_under_a_running_index_is_refused_or_passed_over(
    tmp_path: Path, rows: int, what: str, expected: str
) -> None:
    """Reading a memory map past its file's end kills the process (SIGBUS): each search checks the
    file still holds what it maps, so the damage is a 503 and a rebuild (vectors), or exact search
    (an ANN index), never a dead server or an IndexError's 500."""
    if what == "ann":
        pytest.importorskip("faiss")
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", CUT_UNDER_A_RUNNING_INDEX, str(tmp_path), str(rows), what],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.strip().splitlines()[-1] == expected
