"""Paged document listings (services/documents/listing.py): complete across pages, bounded reads,
honest cursors."""

from __future__ import annotations

import base64
import posixpath
import random
from pathlib import Path

import pytest

from cairn.domain.errors import InvalidInput
from cairn.domain.paths import glob_match, is_generated
from cairn.ports.records import Page as RecordPage
from cairn.services.documents import listing
from cairn.services.repositories import DocumentRepository
from tests.fakes.container import fake_container
from tests.fakes.records import MemoryRecordStore
from tests.support.documents import seed_documents

BRAIN = "brn_listing"


class CountingStore(MemoryRecordStore):
    """Counts the records queries return: what a listing costs on a real store."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def query(self, pk: str, prefix: str = "", **kwargs: object) -> RecordPage:
        page = super().query(pk, prefix, **kwargs)  # type: ignore[arg-type]
        self.read += len(page.items)
        return page


def _repo(paths: list[str], deleted: list[str] | None = None) -> tuple[DocumentRepository, CountingStore]:
    store = CountingStore()
    repo = DocumentRepository(store)
    seed_documents(repo, BRAIN, paths, deleted=deleted or [])
    store.read = 0
    return repo, store


def _reference(
    live: list[str], directory: str, recursive: bool, glob: str | None, generated: bool
) -> list[tuple[str, bool]]:
    """The listing computed the slow way: every entry, a directory sorting as `name/`."""
    prefix = f"{directory}/" if directory else ""
    entries: dict[str, bool] = {}
    holds_shown: set[str] = set()  # directories with a document beneath that is not generated
    for path in sorted(live):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        if not recursive and "/" in rest:
            name = prefix + rest.split("/", 1)[0]
            entries.setdefault(name, True)  # a file of that name wins
            if not is_generated(path):
                holds_shown.add(name)
        else:
            entries[path] = False
    shown = [
        (path, is_dir)
        for path, is_dir in entries.items()
        if (generated or (path in holds_shown if is_dir else not is_generated(path)))
        and (glob is None or glob_match(glob, posixpath.basename(path)))
    ]
    return sorted(shown, key=lambda e: e[0] + ("/" if e[1] else ""))


def _all_pages(repo: DocumentRepository, limit: int, **params: object) -> list[list[tuple[str, bool]]]:
    pages: list[list[tuple[str, bool]]] = []
    cursor: str | None = None
    for _ in range(10_000):
        page = listing.entries(repo, BRAIN, limit=limit, cursor=cursor, **params)  # type: ignore[arg-type]
        pages.append([(e.path, e.is_dir) for e in page.items])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor
    raise AssertionError("the listing never ended")


def _random_tree(rng: random.Random) -> list[str]:
    # Names chosen to sort around `/`: `-` and `.` come before it, `0` and `_` after it.
    names = ["a", "a-b", "a.md", "a0", "b", "_gen", "x y", "é", "a/"]
    paths: set[str] = set()
    for _ in range(rng.randint(1, 60)):
        depth = rng.randint(1, 4)
        parts = [rng.choice(names).rstrip("/") or "a" for _ in range(depth)]
        paths.add("/".join(parts))
    return sorted(paths)


@pytest.mark.parametrize("seed", range(12))
def test_pages_concatenate_to_the_complete_listing_in_every_mode(seed: int) -> None:
    # Given a random tree (some documents deleted) with names sorting just around `/`
    rng = random.Random(seed)
    paths = _random_tree(rng)
    deleted = rng.sample(paths, k=len(paths) // 5)
    live = [p for p in paths if p not in deleted]
    repo, _ = _repo(paths, deleted)
    dirs = ["", *sorted({posixpath.dirname(p) for p in paths} - {""})][:4]
    for directory in dirs:
        for recursive in (False, True):
            for glob in (None, "a*", "[!a]*"):
                for generated in (False, True):
                    params = {
                        "directory": directory,
                        "recursive": recursive,
                        "glob": glob,
                        "include_generated": generated,
                    }
                    expected = _reference(live, directory, recursive, glob, generated)
                    for limit in (1, 2, 3, 7, 1000):
                        # When it is read page by page
                        pages = _all_pages(repo, limit, **params)
                        # Then the pages hold every entry once, in order, and only the last is short
                        assert [e for page in pages for e in page] == expected, (params, limit)
                        assert all(len(page) == limit for page in pages[:-1])
                        assert len(pages[-1]) <= limit and (len(pages[-1]) > 0 or len(pages) == 1)


def test_a_listing_that_fills_its_page_exactly_has_no_cursor() -> None:
    repo, _ = _repo([f"n/{i}.md" for i in range(5)])
    page = listing.entries(repo, BRAIN, "n", limit=5)
    assert [e.path for e in page.items] == [f"n/{i}.md" for i in range(5)]
    assert page.next_cursor is None
    cut = listing.entries(repo, BRAIN, "n", limit=4)
    assert len(cut.items) == 4 and cut.next_cursor is not None


def test_a_directory_is_passed_over_with_one_jump() -> None:
    # Given a root holding two files around one directory of 5,000 documents
    repo, store = _repo(["a.md", *[f"big/{i:05d}.md" for i in range(5000)], "z.md"])
    # When the root is listed
    page = listing.entries(repo, BRAIN, "", limit=100)
    # Then the listing shows the directory once and reads a few dozen records, not 5,000
    assert [(e.path, e.is_dir) for e in page.items] == [("a.md", False), ("big", True), ("z.md", False)]
    assert page.next_cursor is None
    assert store.read < 100


def test_a_page_reads_about_its_limit_not_the_whole_brain() -> None:
    repo, store = _repo([f"notes/{i:05d}.md" for i in range(10_050)])
    page = listing.entries(repo, BRAIN, "", recursive=True, limit=10)
    assert len(page.items) == 10 and page.next_cursor is not None
    assert store.read <= 11
    store.read = 0
    following = listing.entries(repo, BRAIN, "", recursive=True, limit=10, cursor=page.next_cursor)
    assert following.items[0].path == "notes/00010.md"
    assert store.read <= 11


def test_a_cursor_resumes_after_its_entry_even_when_that_entry_is_gone() -> None:
    repo, _ = _repo(["d/a.md", "d/b.md", "d/sub/x.md", "d/z.md"])
    first = listing.entries(repo, BRAIN, "d", limit=2)
    assert [e.path for e in first.items] == ["d/a.md", "d/b.md"]
    seed_documents(repo, BRAIN, ["d/b.md"], deleted=["d/b.md"])
    rest = listing.entries(repo, BRAIN, "d", limit=2, cursor=first.next_cursor)
    assert [(e.path, e.is_dir) for e in rest.items] == [("d/sub", True), ("d/z.md", False)]


def test_a_directory_cursor_skips_the_whole_directory() -> None:
    repo, _ = _repo(["d/sub/1.md", "d/sub/2.md", "d/sub/deep/3.md", "d/sub.md", "d/sub0.md"])
    first = listing.entries(repo, BRAIN, "d", limit=2)
    assert [(e.path, e.is_dir) for e in first.items] == [("d/sub.md", False), ("d/sub", True)]
    rest = listing.entries(repo, BRAIN, "d", limit=2, cursor=first.next_cursor)
    assert [(e.path, e.is_dir) for e in rest.items] == [("d/sub0.md", False)]
    assert rest.next_cursor is None


def test_a_file_and_a_directory_of_one_name_list_once() -> None:
    repo, _ = _repo(["n/x", "n/x.md", "n/x/inner.md"])
    assert [(e.path, e.is_dir) for e in listing.entries(repo, BRAIN, "n", limit=10).items] == [
        ("n/x", False),
        ("n/x.md", False),
    ]


def test_directories_with_only_deleted_documents_are_not_listed() -> None:
    repo, _ = _repo(["gone/a.md", "gone/b.md", "kept/a.md"], deleted=["gone/a.md", "gone/b.md"])
    assert [e.path for e in listing.entries(repo, BRAIN, "", limit=10).items] == ["kept"]


def test_a_directory_of_generated_files_only_is_listed_with_them_only() -> None:
    """As listing it shows nothing, its parent does not show it (it showed an empty directory);
    one whose first file is generated shows its first other document."""
    repo, _ = _repo(["f/_summary.md", "g/_summary.md", "g/z.md", "h/_a.md", "h/_b.md", "h/i/j.md"])
    listed = listing.entries(repo, BRAIN, "", limit=10).items
    assert [(e.path, e.document.path) for e in listed] == [("g", "g/z.md"), ("h", "h/i/j.md")]
    assert listing.entries(repo, BRAIN, "f", limit=10).items == []
    with_generated = listing.entries(repo, BRAIN, "", limit=10, include_generated=True).items
    assert [e.path for e in with_generated] == ["f", "g", "h"]


def _cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("cursor", "directory", "recursive"),
    [
        ("!!not base64!!", "", False),
        (_cursor("fa.md") + "==", "", False),  # padded: not the form handed out
        (_cursor("xa.md"), "", False),  # unknown kind
        (_cursor("f/a.md"), "", False),  # not a valid path
        (_cursor("f"), "", False),
        (_cursor("fother/a.md"), "d", False),  # another directory's entry
        (_cursor("fd/sub/a.md"), "d", False),  # nested: not an entry of a shallow listing
        (_cursor("dd/sub"), "d", True),  # recursive listings have no directory entries
        (base64.urlsafe_b64encode(b"f\xff\xfe").decode(), "", False),
        ("", "", False),
    ],
)
def test_cursors_this_listing_did_not_hand_out_are_refused(
    cursor: str, directory: str, recursive: bool
) -> None:
    repo, _ = _repo(["d/a.md", "d/sub/a.md"])
    with pytest.raises(InvalidInput, match="cursor"):
        listing.entries(repo, BRAIN, directory, recursive=recursive, limit=5, cursor=cursor)


def test_legacy_document_pages_take_only_file_cursors() -> None:
    paths = [f"p/{i:03d}.md" for i in range(25)]
    repo, _ = _repo(paths, deleted=["p/003.md"])
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = listing.documents(repo, BRAIN, limit=4, cursor=cursor)
        seen += [d.path for d in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [p for p in paths if p != "p/003.md"]
    with pytest.raises(InvalidInput, match="cursor"):
        listing.documents(repo, BRAIN, limit=4, cursor=_cursor("dp"))


def test_the_service_lists_everything_and_pages_within_its_cap(tmp_path: Path) -> None:
    # A page is at most max_list_items; `list` (used in-process) reads every page.
    container = fake_container(tmp_path, max_list_items=3)
    brain = container.brains.create("Capped")
    paths = [f"m/{i}.md" for i in range(8)]
    seed_documents(container.documents.repo, brain.id, paths)
    docs = container.documents
    assert [i.path for i in docs.list(brain, "m")] == paths
    first = docs.list_page(brain, "m")
    assert len(first.items) == 3 and first.next_cursor is not None
    assert len(docs.documents_page(brain, limit=2).items) == 2
    for bad in (0, 4):
        with pytest.raises(InvalidInput, match="limit"):
            docs.list_page(brain, "m", limit=bad)
