from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import FileTooLarge, Forbidden, InvalidInput
from cairn.domain.models import Brain
from cairn.services.ingest.inputs import LocalFilePolicy


def test_remember_derives_title_and_path(container: Container, brain: Brain) -> None:
    doc = container.ingest.remember(brain, "# Saturday run\n\nI ran 10k in 55 minutes.", tags=["running"])
    assert doc.title == "Saturday run"
    assert doc.path.startswith("memory/global/saturday-run-") and doc.path.endswith(".md")
    assert doc.metadata["tags"] == "running"


def test_remember_accepts_the_seeds_leading_slash(container: Container, brain: Brain) -> None:
    doc = container.ingest.remember(brain, "body", title="T", path="/memory/global/t.md")
    assert doc.path == "memory/global/t.md"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"content": ""},
        {"content": "x", "title": ""},
        {"content": "x", "title": "t" * 513},
        {"content": "x", "tags": ["t" * 65]},
        {"content": "x", "tags": [str(i) for i in range(65)]},
        {"content": "x", "path": "../escape.md"},
    ],
)
def test_remember_rejects_bad_input_and_writes_nothing(container: Container, brain: Brain, kwargs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput):
        container.ingest.remember(brain, **kwargs)
    assert container.documents.list(brain, recursive=True) == []


def test_reingesting_identical_content_is_reused(container: Container, brain: Brain, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nHow to brew tea.")
    policy = LocalFilePolicy(root=root, max_bytes=25 * 1024 * 1024)
    first = container.ingest.ingest_file(brain, "guide.md", policy)
    again = container.ingest.ingest_file(brain, "guide.md", policy)
    assert not first.reused and first.chunk_count == 1 and first.document.title == "Guide"
    assert again.reused and again.document.version == first.document.version
    assert again.hash == first.hash


def test_ingest_file_stays_below_the_root(container: Container, brain: Brain, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    (root / "link.md").symlink_to(tmp_path / "secret.md")
    policy = LocalFilePolicy(root=root, max_bytes=1024)
    for path in ["../secret.md", str(tmp_path / "secret.md"), "link.md"]:
        with pytest.raises(Forbidden):
            container.ingest.ingest_file(brain, path, policy)
    assert container.documents.list(brain, recursive=True) == []


def test_file_too_large(container: Container, brain: Brain, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as fh:
        fh.truncate(26 * 1024 * 1024)
    with pytest.raises(FileTooLarge):
        container.ingest.ingest_file(brain, str(big), LocalFilePolicy(root=None, max_bytes=25 * 1024 * 1024))


def test_json_is_ingested_as_searchable_text(container: Container, brain: Brain) -> None:
    data = json.dumps({"title": "Inventory", "items": [{"name": "lantern", "count": 2}]}).encode()
    result = container.ingest.ingest_bytes(brain, data, name="inventory.json")
    assert result.document.path == "ingest/inventory.json"
    assert result.document.title == "Inventory"
    assert container.search.search(brain, "lantern").hits[0].path == "ingest/inventory.json"


def test_files_whose_names_clean_alike_keep_their_own_documents(container: Container, brain: Brain) -> None:
    names = ["報告.txt", "議事録.txt", "a|b.txt", "a-b.txt", "...txt", " .txt", "a\u202eb.txt"]
    results = [
        container.ingest.ingest_bytes(brain, f"text of file {n}".encode(), name=name, kind="text")
        for n, name in enumerate(names)
    ]
    assert len({r.path for r in results}) == len(names)
    assert results[0].path == "ingest/報告.txt" and results[3].path == "ingest/a-b.txt"
    for n, result in enumerate(results):
        doc = container.documents.get(brain, result.path)
        assert container.documents.content(doc) == f"text of file {n}".encode()
    again = container.ingest.ingest_bytes(brain, b"text of file 2", name="a|b.txt", kind="text")
    assert again.path == results[2].path and again.reused
