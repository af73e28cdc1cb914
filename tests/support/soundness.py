"""What the crash tests ask of a data directory after a crash: every acknowledged write is there
and found by both legs, nothing deleted is, and the index holds exactly what the records say."""

from __future__ import annotations

from pathlib import Path

from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from tests.support.index_check import index_problems


def note(n: int, round_: int = 0) -> str:
    return f"# Note {n}\n\nThe godwit {n} feeds on the mudflat in round {round_}; marker godwit{n}x{round_}."


def opened(data: Path) -> Container:
    return build_container(Settings(data_dir=data))


def assert_sound(
    container: Container,
    acknowledged: dict[str, str],
    gone: set[str] | None = None,
    in_flight: dict[str, str] | None = None,
) -> None:
    """Every acknowledged text is there, unless the write in flight when the process died (never
    acknowledged, so it may or may not have landed) replaced it; nothing in `gone` is there."""
    brain = container.brains.resolve("shore")
    in_flight = in_flight or {}
    for path, text in acknowledged.items():
        assert container.documents.read(brain, path).decode() in (text, in_flight.get(path)), path
    for path in gone or set():
        assert not container.documents.exists(brain, path), path
    assert index_problems(container) == []
    assert container.repair.compare(brain, deep=True).sound
