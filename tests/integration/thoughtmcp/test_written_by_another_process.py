"""ThoughtMCP rows a process keeps (services/thoughtmcp/store.py) follow what another process
commits to the same data directory (`cairn serve`, `cairn mcp` and the CLI may share one): a memory
hard-forgotten or a user erased there is never recalled here from the kept rows, and a memory
remembered there is recalled here at once, even when the commit lands while the rows are being
read. Each process is a container of its own over its own store objects on the same files; one
test uses a real second process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.thoughtmcp.models import Filters, NewMemory, Row
from tests.support.shapes import embedded, process

USER = "alice"
ROOT = Path(__file__).resolve().parents[3]
TEA = "Alice prefers green tea in the morning."
SECRET = "The secret launch code is PELICAN-42."


def two_processes(tmp_path: Path) -> tuple[Container, Container]:
    return process(embedded(tmp_path / "data"), tmp_path), process(embedded(tmp_path / "data"), tmp_path)


def remember(c: Container, brain: Brain, text: str, user: str = USER) -> str:
    return str(c.thoughts.remember(brain, NewMemory(text, user, "s1", "semantic"))["memoryId"])


def recalled(c: Container, brain: Brain, *, text: str | None = None, reinforce: bool = True) -> list[str]:
    hits, _ = c.thoughts.recall(
        brain, USER, text=text, filters=Filters(min_strength=0.0), limit=50, reinforce=reinforce
    )
    return sorted(h.content for h in hits)


@dataclass
class Shared:
    serve: Container  # the process that keeps rows
    other: Container  # another process on the same data directory
    brain: Brain
    secret: str  # the id of the SECRET memory


@pytest.fixture
def shared(tmp_path: Path) -> Shared:
    serve, other = two_processes(tmp_path)
    brain = serve.brains.create("ThoughtMCP", slug="t")
    remember(serve, brain, TEA)
    secret = remember(serve, brain, SECRET)
    # Given the user's rows kept by `serve` (read without reinforcing, so nothing `serve` writes
    # afterwards has them read again)
    assert recalled(serve, brain, reinforce=False) == sorted([TEA, SECRET])
    return Shared(serve, other, brain, secret)


def test_a_memory_hard_forgotten_by_another_process_is_not_recalled(shared: Shared) -> None:
    shared.other.thoughts.forget(shared.brain, shared.secret, USER, soft=False)

    assert recalled(shared.serve, shared.brain, reinforce=False) == [TEA]
    assert recalled(shared.serve, shared.brain, text="secret launch code") == [TEA]
    assert recalled(shared.serve, shared.brain) == [TEA]


def test_a_user_erased_by_another_process_is_not_recalled(shared: Shared) -> None:
    receipt = shared.other.erasure.erase("thoughtmcp_user", USER)

    assert receipt.status == "completed"
    assert recalled(shared.serve, shared.brain, reinforce=False) == []
    assert recalled(shared.serve, shared.brain, text="secret launch code") == []


def test_a_memory_remembered_by_another_process_is_recalled_at_once(shared: Shared) -> None:
    later = "Alice moved the standup to ten o'clock."

    remember(shared.other, shared.brain, later)

    assert recalled(shared.serve, shared.brain, reinforce=False) == sorted([TEA, SECRET, later])


def test_a_user_erased_by_a_separate_process_is_not_recalled(shared: Shared, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tests.support.shapes import embedded, process
        tmp = Path({str(tmp_path)!r})
        c = process(embedded(tmp / "data"), tmp)
        print(c.erasure.erase("thoughtmcp_user", {USER!r}).status)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "completed", done.stderr[-2000:]

    assert recalled(shared.serve, shared.brain, reinforce=False) == []


def test_rows_read_while_another_process_commits_are_read_again(
    shared: Shared, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_rows = shared.serve.thoughts._read_rows
    landed: list[bool] = []

    def read_then_other_forgets(brain_id: str, user_id: str) -> list[Row]:
        rows = read_rows(brain_id, user_id)
        if not landed:
            landed.append(True)
            shared.other.thoughts.forget(shared.brain, shared.secret, USER, soft=False)
        return rows

    shared.serve.thoughts._kept.pop((shared.brain.id, USER), None)  # type: ignore[union-attr]  # read afresh
    monkeypatch.setattr(shared.serve.thoughts, "_read_rows", read_then_other_forgets)
    assert recalled(shared.serve, shared.brain, reinforce=False) == sorted([TEA, SECRET])  # read before
    assert landed
    assert recalled(shared.serve, shared.brain, reinforce=False) == [TEA]
