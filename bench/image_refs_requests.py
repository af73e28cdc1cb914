"""The record store's calls of one ingest of a Markdown document, by kind: what recording the images
it shows (services/mnemosyne/image_items.py) costs, on the tests' in-memory store (each call is one
DynamoDB request: get GetItem, get_many BatchGetItem, query Query, put PutItem, delete DeleteItem,
transact TransactWriteItems).

    .venv/bin/python bench/image_refs_requests.py

One brain holds an image; the same note is ingested five ways, each counted alone.
"""

from __future__ import annotations

import collections
import io
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.container import fake_adapters
from tests.fakes.records import MemoryRecordStore

from cairn.auth import access
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.domain.models import Brain

COUNTED = ("get", "get_many", "query", "put", "delete", "transact", "scan")
CASES = (
    ("first ingest, one image", "notes/a.md", b"# A\n\n![A heron](/img/heron.jpg)\n"),
    ("again, new text, same image", "notes/a.md", b"# A\n\nMore.\n\n![A heron](/img/heron.jpg)\n"),
    ("again, new caption", "notes/a.md", b"# A\n\nMore.\n\n![A grey heron](/img/heron.jpg)\n"),
    ("first ingest, no image", "notes/b.md", b"# B\n\nNo image.\n"),
    ("again, no image", "notes/b.md", b"# B\n\nStill no image.\n"),
)


class Counting:
    """A record store counting the calls made to it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, collections.Counter[str]()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name not in COUNTED:
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted


def main() -> None:
    records = Counting(MemoryRecordStore())
    data_dir = Path(tempfile.mkdtemp(prefix="image-refs-requests-"))
    c = build_container(Settings(data_dir=data_dir), replace(fake_adapters(), records=records))

    def ingest(brain: Brain, path: str, data: bytes) -> None:
        with access.as_system():
            c.ingest.ingest_bytes(brain, data, name=path.rsplit("/", 1)[-1], path=path, queue=False)

    jpeg = io.BytesIO()
    Image.new("RGB", (16, 12)).save(jpeg, "JPEG")
    with access.as_system():
        brain = c.brains.create("Shore", slug="shore")
    ingest(brain, "img/heron.jpg", jpeg.getvalue())
    for label, path, data in CASES:
        records.calls.clear()
        ingest(brain, path, data)
        print(f"{label:30s} total {sum(records.calls.values()):3d} {dict(sorted(records.calls.items()))}")


if __name__ == "__main__":
    main()
