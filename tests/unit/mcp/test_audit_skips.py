"""The audit sink records nothing for an answer marked as having changed nothing, and skips, with an
INFO line rather than an error, an entry whose brain cannot be resolved (kit/audit.py)."""

from __future__ import annotations

import logging

import pytest

from cairn.auth import access
from cairn.auth.principal import READ, WRITE, Principal, Via
from cairn.domain.errors import NoBrain
from cairn.entrypoints.mcp.kit import AuditSink, ok_result
from cairn.entrypoints.mcp.kit.audit import nothing_changed
from tests.unit.mcp.test_kit import ECHO, EchoArgs, Echoed, Log

ME = Principal("acme", "ann", frozenset({READ, WRITE}), Via.api_key)


def _no_brain(ref: str | None) -> str:
    raise NoBrain("no brain this caller may use exists yet")


def test_an_answer_that_changed_nothing_is_not_audited() -> None:
    log = Log()
    sink = AuditSink(log, lambda ref: f"brn_{ref or 'default'}")
    with access.acting_as(ME):
        sink.record(ECHO, EchoArgs(text="hi"), nothing_changed(ok_result("hi", Echoed(text="hi"))))
        sink.record(ECHO, EchoArgs(text="yo"), ok_result("yo", Echoed(text="yo")))

    assert log.entries == [(ME, "mcp.toy_echo", "brn_default", "yo")]


def test_an_entry_whose_brain_cannot_be_resolved_is_skipped_at_info(caplog: pytest.LogCaptureFixture) -> None:
    log = Log()
    sink = AuditSink(log, _no_brain)
    with caplog.at_level(logging.INFO, logger="cairn.mcp"), access.acting_as(ME):
        sink.record(ECHO, EchoArgs(text="hi"), ok_result("hi", Echoed(text="hi")))

    assert log.entries == []
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.INFO, None)]
    assert "toy_echo" in caplog.records[0].getMessage()
