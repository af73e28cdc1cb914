"""The embedded store's audit spill (adapters/local/audit_spill.py): whole entries, oldest first,
taken once; what a stop cut short is skipped, never raised, and never joins the next entry."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from cairn.adapters.local.audit_spill import FileAuditSpill


def _entry(n: int) -> dict[str, object]:
    return {"id": f"aud_{n}", "action": "doc.write", "detail": {"n": n, "text": "ü\n" * n}}


def test_entries_are_taken_oldest_first_and_only_once(tmp_path: Path) -> None:
    spill = FileAuditSpill(tmp_path / "audit-kept.jsonl")
    assert spill.take() == []
    spill.append([_entry(1), _entry(2)])
    spill.append([_entry(3)])
    assert FileAuditSpill(spill.path).take() == [_entry(1), _entry(2), _entry(3)]
    assert spill.take() == []


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
    assert spill.take() == [_entry(1), _entry(2), _entry(4)]
    assert "1 audit entries cut short" in caplog.text
    assert spill.take() == []


def test_lines_that_are_not_entries_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "audit-kept.jsonl"
    path.write_bytes(b'[1]\n\xff\xfe\n"text"\n\n{"id": "aud_1"}\n')
    assert FileAuditSpill(path).take() == [{"id": "aud_1"}]
