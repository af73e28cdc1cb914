from __future__ import annotations

import os
from pathlib import Path

import pytest

from cairn.domain.errors import FileTooLarge, Forbidden, InvalidInput, NotFound
from cairn.ingest.files import read_local_file

MiB = 1024 * 1024


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "ingest"
    (base / "docs").mkdir(parents=True)
    (base / "docs" / "note.md").write_text("# Note\n")
    (tmp_path / "outside.txt").write_text("secret outside")
    return base


class TestInsideRoot:
    def test_relative_path_resolves_against_root(self, root: Path) -> None:
        result = read_local_file("docs/note.md", root=root, max_bytes=MiB)
        assert result.data == b"# Note\n"
        assert result.name == "note.md"
        assert result.path == (root / "docs" / "note.md").resolve()

    def test_absolute_path_inside_root(self, root: Path) -> None:
        assert read_local_file(str(root / "docs" / "note.md"), root=root, max_bytes=MiB).data == b"# Note\n"

    def test_symlink_inside_root_is_followed(self, root: Path) -> None:
        (root / "alias.md").symlink_to(root / "docs" / "note.md")
        result = read_local_file("alias.md", root=root, max_bytes=MiB)
        assert result.data == b"# Note\n"
        assert result.name == "alias.md"

    def test_dotdot_that_stays_inside_is_fine(self, root: Path) -> None:
        assert read_local_file("docs/../docs/note.md", root=root, max_bytes=MiB).data == b"# Note\n"


class TestEscapes:
    @pytest.mark.parametrize("path", ["../outside.txt", "docs/../../outside.txt", "../missing.txt"])
    def test_traversal_is_forbidden(self, root: Path, path: str) -> None:
        with pytest.raises(Forbidden) as caught:
            read_local_file(path, root=root, max_bytes=MiB)
        assert str(root.parent) not in caught.value.message  # the resolved outside path is not revealed

    def test_absolute_path_outside_root_is_forbidden(self, root: Path) -> None:
        with pytest.raises(Forbidden):
            read_local_file(str(root.parent / "outside.txt"), root=root, max_bytes=MiB)
        with pytest.raises(Forbidden):
            read_local_file("/etc/hostname", root=root, max_bytes=MiB)

    def test_symlink_pointing_outside_is_forbidden(self, root: Path) -> None:
        (root / "docs" / "leak.txt").symlink_to(root.parent / "outside.txt")
        with pytest.raises(Forbidden) as caught:
            read_local_file("docs/leak.txt", root=root, max_bytes=MiB)
        assert "outside.txt" not in caught.value.message

    def test_symlinked_directory_pointing_outside_is_forbidden(self, root: Path) -> None:
        (root / "up").symlink_to(root.parent, target_is_directory=True)
        with pytest.raises(Forbidden):
            read_local_file("up/outside.txt", root=root, max_bytes=MiB)

    def test_root_itself_is_not_a_file(self, root: Path) -> None:
        with pytest.raises(Forbidden):
            read_local_file(".", root=root, max_bytes=MiB)

    def test_sibling_with_a_common_prefix_is_outside(self, root: Path) -> None:
        sibling = root.parent / "ingest-evil"
        sibling.mkdir()
        (sibling / "x.md").write_text("x")
        with pytest.raises(Forbidden):
            read_local_file("../ingest-evil/x.md", root=root, max_bytes=MiB)


class TestErrors:
    def test_missing_file(self, root: Path) -> None:
        with pytest.raises(NotFound):
            read_local_file("docs/nope.md", root=root, max_bytes=MiB)

    def test_directory(self, root: Path) -> None:
        with pytest.raises(InvalidInput, match="directory"):
            read_local_file("docs", root=root, max_bytes=MiB)

    def test_fifo_is_not_a_regular_file(self, root: Path) -> None:
        os.mkfifo(root / "pipe")
        with pytest.raises(InvalidInput, match="not a regular file"):
            read_local_file("pipe", root=root, max_bytes=MiB)

    def test_too_large_is_refused_from_the_size_alone(self, root: Path) -> None:
        big = root / "big.bin"
        with big.open("wb") as handle:
            handle.truncate(25 * MiB + 1)  # sparse: cheap to create
        with pytest.raises(FileTooLarge, match="exceeds 25 MiB"):
            read_local_file("big.bin", root=root, max_bytes=25 * MiB)

    def test_file_that_grew_after_the_size_check_is_refused(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Given a file whose stat still reports a small size but which now holds more bytes
        (root / "growing.log").write_bytes(b"g" * 500)
        real_fstat = os.fstat

        def stale_fstat(fd: int) -> os.stat_result:
            fields = list(real_fstat(fd))
            fields[6] = 10  # st_size
            return os.stat_result(fields)

        monkeypatch.setattr("cairn.ingest.files.os.fstat", stale_fstat)
        # When it is read with a limit between the two sizes / Then the read itself catches it
        with pytest.raises(FileTooLarge):
            read_local_file("growing.log", root=root, max_bytes=100)

    def test_exactly_at_the_limit_is_read(self, root: Path) -> None:
        (root / "edge.txt").write_bytes(b"z" * 100)
        assert len(read_local_file("edge.txt", root=root, max_bytes=100).data) == 100

    def test_empty_and_nul_paths_are_invalid(self, root: Path) -> None:
        for bad in ("", "docs/\x00note.md"):
            with pytest.raises(InvalidInput):
                read_local_file(bad, root=root, max_bytes=MiB)


class TestNoRoot:
    def test_reads_any_absolute_path(self, root: Path) -> None:
        outside = root.parent / "outside.txt"
        result = read_local_file(str(outside), root=None, max_bytes=MiB)
        assert result.data == b"secret outside"

    def test_relative_paths_resolve_against_the_cwd(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(root / "docs")
        assert read_local_file("../../outside.txt", root=None, max_bytes=MiB).data == b"secret outside"

    def test_still_checks_size_and_existence(self, root: Path) -> None:
        with pytest.raises(NotFound):
            read_local_file(str(root / "missing"), root=None, max_bytes=MiB)
        with pytest.raises(FileTooLarge):
            read_local_file(str(root.parent / "outside.txt"), root=None, max_bytes=3)
