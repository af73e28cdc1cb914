"""A file that opens as a regular file but cannot be read is refused by name, not an internal error."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from cairn.domain.errors import InvalidInput
from cairn.ingest import files
from cairn.ingest.files import read_local_file

MiB = 1024 * 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/mem is Linux's")
def test_proc_self_mem_is_refused_by_name() -> None:
    # It is a regular file of size 0 to fstat, and reading its first page is EIO.
    with pytest.raises(InvalidInput) as refused:
        read_local_file("/proc/self/mem", root=None, max_bytes=MiB)
    assert refused.value.message == "cannot read /proc/self/mem: EIO"


@pytest.mark.parametrize("confined", [True, False])
def test_a_read_error_is_refused_and_the_descriptor_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    (tmp_path / "worn.md").write_text("# Worn\n")
    opened: list[int] = []
    real_open = os.open

    def tracking_open(*args: object, **kwargs: object) -> int:
        fd = real_open(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(fd)
        return fd

    def failing_read(fd: int, n: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(files.os, "open", tracking_open)
    monkeypatch.setattr(files.os, "read", failing_read)
    path = "worn.md" if confined else str(tmp_path / "worn.md")
    with pytest.raises(InvalidInput) as refused:
        read_local_file(path, root=tmp_path if confined else None, max_bytes=MiB)
    message = refused.value.message
    assert message.startswith("cannot read ") and message.endswith("worn.md: EIO")
    monkeypatch.undo()
    for fd in opened:  # every descriptor the read opened is closed again
        with pytest.raises(OSError):
            os.fstat(fd)
