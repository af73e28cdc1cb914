from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from cairn.domain.errors import FileTooLarge, Forbidden, InvalidInput, NotFound
from cairn.ingest.files import read_local_file
from tests.support.swap_race import lay_out, swapping

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

    def test_symlinked_directories_inside_the_root_are_followed(self, root: Path) -> None:
        (root / "docs" / "deep").mkdir()
        (root / "docs" / "deep" / "leaf.md").write_text("leaf")
        (root / "rel").symlink_to("docs/deep", target_is_directory=True)
        (root / "abs").symlink_to(root / "docs", target_is_directory=True)
        assert read_local_file("rel/leaf.md", root=root, max_bytes=MiB).data == b"leaf"
        assert read_local_file("abs/deep/leaf.md", root=root, max_bytes=MiB).data == b"leaf"
        # `..` after a symlink climbs from where the symlink led, as the kernel's own lookup does
        result = read_local_file("rel/../note.md", root=root, max_bytes=MiB)
        assert result.data == b"# Note\n"
        assert result.path == root.resolve() / "docs" / "note.md"


class TestHardLinks:
    def test_a_hard_link_to_a_file_of_another_user_is_forbidden(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Given a file with a second name outside the root, owned by a uid that is not the server's
        os.link(root.parent / "outside.txt", root / "linked.txt")
        monkeypatch.setattr("cairn.ingest.files.os.geteuid", lambda: os.getuid() + 1)
        with pytest.raises(Forbidden, match="other hard links") as caught:
            read_local_file("linked.txt", root=root, max_bytes=MiB)
        assert "secret" not in caught.value.message

    def test_a_single_link_file_of_another_user_is_read(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("cairn.ingest.files.os.geteuid", lambda: os.getuid() + 1)
        assert read_local_file("docs/note.md", root=root, max_bytes=MiB).data == b"# Note\n"

    def test_a_hard_linked_file_the_server_owns_is_read(self, root: Path) -> None:
        os.link(root.parent / "outside.txt", root / "linked.txt")
        assert read_local_file("linked.txt", root=root, max_bytes=MiB).data == b"secret outside"


class TestEscapes:
    @pytest.mark.parametrize("path", ["../outside.txt", "docs/../../outside.txt", "../missing.txt"])
    def test_traversal_is_forbidden(self, root: Path, path: str) -> None:
        with pytest.raises(Forbidden) as caught:
            read_local_file(path, root=root, max_bytes=MiB)
        # The refusal names where files may be read from, never the resolved outside path
        assert caught.value.message == f"{path} is outside {root}, the directory files may be read from"

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
        for path in (".", "docs/..", str(root)):
            with pytest.raises(Forbidden):
                read_local_file(path, root=root, max_bytes=MiB)

    def test_absolute_path_below_the_root_that_climbs_out_is_forbidden(self, root: Path) -> None:
        with pytest.raises(Forbidden):
            read_local_file(f"{root}/docs/../../outside.txt", root=root, max_bytes=MiB)

    def test_relative_symlinked_directory_climbing_out_is_forbidden(self, root: Path) -> None:
        (root / "docs" / "up").symlink_to("../..", target_is_directory=True)
        with pytest.raises(Forbidden):
            read_local_file("docs/up/outside.txt", root=root, max_bytes=MiB)

    def test_symlink_chain_ending_outside_is_forbidden(self, root: Path) -> None:
        (root / "hop").symlink_to("docs/next")
        (root / "docs" / "next").symlink_to(root.parent / "outside.txt")
        with pytest.raises(Forbidden):
            read_local_file("hop", root=root, max_bytes=MiB)

    def test_symlink_loop_is_invalid(self, root: Path) -> None:
        (root / "a").symlink_to("b")
        (root / "b").symlink_to("a")
        with pytest.raises(InvalidInput, match="too many symbolic links"):
            read_local_file("a", root=root, max_bytes=MiB)

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

    @pytest.mark.timeout(10)  # opening a FIFO without a writer must not block
    def test_fifo_is_not_a_regular_file(self, root: Path) -> None:
        os.mkfifo(root / "pipe")
        (root / "pipe-link").symlink_to("pipe")
        for path in ("pipe", "pipe-link"):
            with pytest.raises(InvalidInput, match="not a regular file"):
                read_local_file(path, root=root, max_bytes=MiB)

    def test_a_file_used_as_a_directory_is_not_found(self, root: Path) -> None:
        with pytest.raises(NotFound):
            read_local_file("docs/note.md/x", root=root, max_bytes=MiB)

    def test_a_missing_file_names_the_root(self, root: Path) -> None:
        with pytest.raises(NotFound) as caught:
            read_local_file("docs/nope.md", root=root, max_bytes=MiB)
        assert str(root) in caught.value.message

    def test_overlong_paths_are_invalid_and_quoted_short(self, root: Path) -> None:
        with pytest.raises(InvalidInput, match="exceeds 4096"):
            read_local_file("a/" * 3000, root=root, max_bytes=MiB)
        with pytest.raises(Forbidden) as caught:
            read_local_file("../" + "x" * 1000, root=root, max_bytes=MiB)
        assert len(caught.value.message) < 120 + len(str(root)) + 60

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


class TestRaces:
    def test_swapping_a_directory_for_an_outside_symlink_never_leaks(self, tmp_path: Path) -> None:
        # Given a directory under the root that another thread keeps swapping (by rename) for a
        # symlink to an outside directory holding a file of the same name
        root = tmp_path / "root"
        lay_out(root, tmp_path / "outside")
        outcomes: Counter[str] = Counter()
        with swapping(root, outcomes):
            # When the reader reads through the swapped name hundreds of times (and on, on a
            # busy machine, until the race has gone both ways)
            for reads in range(30_000):
                try:
                    data = read_local_file("d/f.txt", root=root, max_bytes=MiB).data
                except (Forbidden, NotFound, InvalidInput):
                    outcomes["refused"] += 1
                else:
                    outcomes[data.decode()] += 1
                if reads >= 600 and outcomes["inside"] and outcomes["refused"] and outcomes["swaps"] > 100:
                    break
        # Then the outside file is never returned, and the race really happened both ways
        assert outcomes["OUTSIDE SECRET"] == 0, outcomes
        assert outcomes["inside"] > 0 and outcomes["refused"] > 0, outcomes
        assert outcomes["swaps"] > 100, outcomes
