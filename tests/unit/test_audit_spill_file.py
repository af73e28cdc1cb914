"""The embedded store's audit spill (adapters/local/audit_spill.py): whole entries, oldest first,
left in the file until a rewrite drops them; what a stop cut short is skipped, never raised, and
never joins the next entry. A spill path that is not a regular file is refused, never followed."""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path

import pytest

from cairn.adapters.local.audit_spill import MAX_LINE, FileAuditSpill
from cairn.domain.errors import Unavailable


def _entry(n: int) -> dict[str, object]:
    return {"id": f"aud_{n}", "action": "doc.write", "detail": {"n": n, "text": "ü\n" * n}}


def test_entries_are_read_oldest_first_and_kept_until_dropped(tmp_path: Path) -> None:
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    assert spill.read(10) == []
    spill.append([_entry(1), _entry(2)])
    spill.append([_entry(3)])
    assert FileAuditSpill(spill.path).read(10) == [_entry(1), _entry(2), _entry(3)]
    assert spill.read(2) == [_entry(1), _entry(2)]
    spill.rewrite(lambda e: None if e["id"] == "aud_2" else e)
    assert spill.read(10) == [_entry(1), _entry(3)]


@pytest.mark.parametrize("cut", [1, 7, -1])
def test_a_spill_cut_short_is_read_up_to_its_last_whole_entry(
    tmp_path: Path, cut: int, caplog: pytest.LogCaptureFixture
) -> None:
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    spill.append([_entry(1), _entry(2)])
    whole = spill.path.read_bytes()
    last = json.dumps(_entry(3), separators=(",", ":")).encode()
    spill.path.write_bytes(whole + last[:cut])  # a stop while the third was appended
    spill.append([_entry(4)])
    caplog.set_level(logging.WARNING)
    assert spill.read(10) == [_entry(1), _entry(2), _entry(4)]
    assert "1 audit entries cut short" in caplog.text
    spill.rewrite(lambda e: e)  # the line cut short is dropped with the rewrite
    assert spill.path.read_bytes().count(b"\n") == 3


def test_lines_that_are_not_entries_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "audit-kept.jsonl"
    path.write_bytes(b'[1]\n\xff\xfe\n"text"\n\n{"n": 1}\n{"id": "aud_1"}\n')
    assert FileAuditSpill(path).read(10) == [{"id": "aud_1"}]


def test_a_line_longer_than_any_entry_is_skipped_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "audit-kept.jsonl"
    with path.open("wb") as out:
        out.write(b'{"id": "aud_1"}\n')
        out.write(b"\x00" * (3 * MAX_LINE + 5) + b"\n")
        out.write(b'{"id": "aud_2"}\n')
    assert FileAuditSpill(path).read(10) == [{"id": "aud_1"}, {"id": "aud_2"}]


def test_a_symlinked_spill_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    """Before, take() followed the link: it read the target as entries and truncated it."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b'{"id": "aud_1"}\nsomeone else\'s file\n')
    path = tmp_path / "audit-kept.jsonl"
    path.symlink_to(elsewhere)
    spill = FileAuditSpill(path)
    for call in (
        lambda: spill.read(10),
        lambda: spill.rewrite(lambda e: None),
        lambda: spill.append([_entry(1)]),
    ):
        with pytest.raises(Unavailable, match=r"audit-kept\.jsonl"):
            call()
    assert elsewhere.read_bytes() == b'{"id": "aud_1"}\nsomeone else\'s file\n'


def test_a_spill_path_that_is_a_directory_or_a_fifo_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "audit-kept.jsonl").mkdir()
    (tmp_path / "b").mkdir()
    os.mkfifo(tmp_path / "b" / "audit-kept.jsonl")
    for path in (tmp_path / "a" / "audit-kept.jsonl", tmp_path / "b" / "audit-kept.jsonl"):
        with pytest.raises(Unavailable):
            FileAuditSpill(path).read(10)


def test_an_append_waiting_for_a_rewrite_goes_to_the_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite replaces the file: an append that opened the old one and waited for its lock
    meanwhile must not write to the replaced file, where nothing would read it."""
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    spill.append([_entry(1)])
    replaced = spill.path.stat().st_ino
    flock = fcntl.flock
    rewrites = [lambda: spill.rewrite(lambda e: e)]

    def rewritten_while_waiting(fd: int, op: int) -> None:
        if rewrites:  # the append holds the old file open: a rewrite replaces it meanwhile
            rewrites.pop()()
        flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", rewritten_while_waiting)
    spill.append([_entry(2)])
    assert spill.path.stat().st_ino != replaced
    assert [e["id"] for e in spill.read(10)] == ["aud_1", "aud_2"]


def test_a_rewrite_never_writes_through_a_link_left_at_its_new_file_s_name(tmp_path: Path) -> None:
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    spill.append([_entry(1)])
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not ours\n")
    (tmp_path / "audit-kept.jsonl.new").symlink_to(elsewhere)
    spill.rewrite(lambda e: e)
    assert elsewhere.read_text() == "not ours\n"
    assert spill.read(10) == [_entry(1)]
