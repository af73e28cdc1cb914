"""A hard forget removes whatever is left of a memory, wherever it is (services/thoughtmcp/
forgetting.py): beside a recall that reinforces its row at the same moment; after its document was
renamed, overwritten or deleted through the store protocol; and one that cannot finish leaves the
memory whole, links included. On the embedded store and the AWS adapters."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput, RecordConflict
from cairn.domain.models import Brain
from cairn.services.documents.inputs import BatchOp, DocumentInput
from cairn.services.thoughtmcp.models import Filters, ThoughtError, user_folder
from tests.integration.thoughtmcp.test_removed_elsewhere import USER, brain, remember
from tests.support.shapes import fresh_store

TEXT = "The billing service deploys every Tuesday after the payments regression suite passes"
__all__ = ["brain", "fresh_store"]  # fixtures: the brain, and `c`, a fresh store on each shape


def linked_pair(c: Container, brain: Brain) -> tuple[str, str]:
    kept = remember(c, brain, TEXT)
    doomed = remember(c, brain, TEXT + " on staging")
    assert [link.target_id for link in c.thoughts.links.outgoing(brain.id, doomed)] == [kept]
    return kept, doomed


def recalled(c: Container, brain: Brain) -> list[str]:
    hits, _ = c.thoughts.recall(brain, USER, text=None, filters=Filters(min_strength=0.0), limit=50)
    return [h.row.id for h in hits]


def path_of(c: Container, memory_id: str) -> str:
    doc = c.documents.repo.get_by_id(memory_id)
    assert doc is not None
    return doc.path


def assert_gone(c: Container, brain: Brain, memory_id: str) -> None:
    assert c.documents.repo.stored_by_id(memory_id) is None  # erased: record, pointer (and blob)
    assert c.thoughts.rows.get(brain.id, USER, [memory_id]) == {}
    assert c.thoughts.sectors.get(brain.id, USER, [memory_id]) == {}
    assert memory_id not in recalled(c, brain)
    assert c.thoughts.get_many(brain, USER, [memory_id]) == {}
    with pytest.raises(ThoughtError, match="Memory not found"):
        c.thoughts.forget(brain, memory_id, USER)


def test_a_hard_forget_beside_a_recall_reinforcing_the_row_removes_it_and_its_links(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, doomed = linked_pair(c, brain)
    erase = c.thoughts.documents.erase

    def recalled_meanwhile(*args: Any, **kwargs: Any) -> Any:
        assert set(recalled(c, brain)) == {kept, doomed}  # reinforces both rows: new versions
        return erase(*args, **kwargs)

    monkeypatch.setattr(c.thoughts.documents, "erase", recalled_meanwhile)
    answer = c.thoughts.forget(brain, doomed, USER)

    assert answer["deletionType"] == "hard"
    assert_gone(c, brain, doomed)
    assert c.thoughts.links.outgoing(brain.id, kept) == []
    row = c.thoughts.rows.get(brain.id, USER, [kept])[kept]
    assert (row.link_count, row.link_sum) == (0, 0.0)
    assert recalled(c, brain) == [kept]


def test_a_hard_forget_that_cannot_commit_leaves_the_memory_whole(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, doomed = linked_pair(c, brain)
    before = c.thoughts.rows.get(brain.id, USER, [kept, doomed])

    def always_losing(*args: Any, **kwargs: Any) -> Any:
        raise RecordConflict("another process wrote the document first")

    monkeypatch.setattr(c.thoughts.documents, "erase", always_losing)
    with pytest.raises(ThoughtError, match="kept changing") as refused:
        c.thoughts.forget(brain, doomed, USER)

    assert refused.value.error_code == "CONFLICT"
    assert [link.target_id for link in c.thoughts.links.outgoing(brain.id, doomed)] == [kept]
    assert [link.target_id for link in c.thoughts.links.outgoing(brain.id, kept)] == [doomed]
    after = c.thoughts.rows.get(brain.id, USER, [kept, doomed])
    assert {m: (r.link_count, r.link_sum) for m, r in after.items()} == {
        m: (r.link_count, r.link_sum) for m, r in before.items()
    }
    assert set(recalled(c, brain)) == {kept, doomed}


def test_a_hard_forget_goes_again_when_another_process_wrote_the_document_first(
    c: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, doomed = linked_pair(c, brain)
    erase = c.thoughts.documents.erase
    lost: list[int] = []

    def loses_twice(*args: Any, **kwargs: Any) -> Any:
        if len(lost) < 2:
            lost.append(1)
            raise RecordConflict("another process wrote the document first")
        return erase(*args, **kwargs)

    monkeypatch.setattr(c.thoughts.documents, "erase", loses_twice)
    c.thoughts.forget(brain, doomed, None)

    assert_gone(c, brain, doomed)
    assert c.thoughts.links.outgoing(brain.id, kept) == []


@pytest.mark.parametrize("user", [USER, None], ids=["forget", "batch_forget"])
def test_a_memory_renamed_elsewhere_is_forgotten_where_it_is_and_not_updated_as_if_it_kept_changing(
    c: Container, brain: Brain, user: str | None
) -> None:
    kept, doomed = linked_pair(c, brain)
    c.documents.rename(brain, path_of(c, doomed), "notes/locker.md")

    for change in (
        lambda: c.thoughts.update(brain, doomed, USER, salience=0.2),
        lambda: c.thoughts.forget(brain, doomed, USER, soft=True),
    ):
        with pytest.raises(ThoughtError, match="moved") as refused:
            change()
        assert refused.value.error_code is None
    answer = c.thoughts.forget(brain, doomed, user)

    assert answer["message"] == "Memory and all related data removed"
    assert c.documents.repo.get(brain.id, "notes/locker.md") is None
    assert_gone(c, brain, doomed)
    assert c.thoughts.links.outgoing(brain.id, kept) == []
    assert recalled(c, brain) == [kept]


def test_a_memory_renamed_then_deleted_elsewhere_takes_its_row_with_it(c: Container, brain: Brain) -> None:
    kept = remember(c, brain, "The kettle is descaled every Sunday morning.")
    doomed = remember(c, brain, "My bank PIN is 4711, keep it safe.")
    assert set(recalled(c, brain)) == {kept, doomed}  # the process keeps these rows from here on
    c.documents.rename(brain, path_of(c, doomed), f"notes/{doomed}.md")

    c.documents.delete(brain, f"notes/{doomed}.md")

    assert recalled(c, brain) == [kept]
    assert list(c.thoughts.get_many(brain, USER, [doomed, kept])) == [kept]
    assert c.thoughts.sectors.get(brain.id, USER, [doomed]) == {}
    with pytest.raises(ThoughtError, match="Memory not found"):
        c.thoughts.forget(brain, doomed, USER)


@pytest.mark.parametrize("moved", [False, True], ids=["in-its-folder", "renamed-out-of-it"])
@pytest.mark.parametrize("how", ["write", "append"])
def test_a_plain_write_over_a_memory_is_refused_and_changes_nothing(
    c: Container, brain: Brain, moved: bool, how: str
) -> None:
    """A plain document written over a user's memory would keep its text and drop its owner (the
    whole brain could then read it) and its row: refused, wherever the memory has been moved, and
    in the user's folder whether a memory is there or not (no answer tells which)."""
    kept = remember(c, brain, "The kettle is descaled every Sunday morning.")
    private = remember(c, brain, "My bank PIN is 4711, keep it safe.")
    path = path_of(c, private)
    if moved:
        c.documents.rename(brain, path, f"notes/{private}.md")
        path = f"notes/{private}.md"
    before = c.documents.repo.get(brain.id, path)
    write = {
        "write": lambda: c.documents.write(
            brain, path, b"# note\n\nreplaced through the store protocol", DocumentInput()
        ),
        "append": lambda: c.documents.append(brain, path, b"\nUPDATE: the PIN changed."),
    }[how]
    with pytest.raises(InvalidInput, match=r"ThoughtMCP|typed memory"):
        write()
    after = c.documents.repo.get(brain.id, path)
    assert before is not None and after is not None
    assert (after.version, after.memory) == (before.version, before.memory)
    assert sorted(recalled(c, brain)) == sorted([kept, private])
    if not moved:  # a free name in the user's folder is refused the same way, and moving into it
        free = path.rsplit("/", 1)[0] + "/mem_nothing_here.md"
        with pytest.raises(InvalidInput, match="ThoughtMCP user's folder"):
            c.documents.write(brain, free, b"# note", DocumentInput())
        c.documents.write(brain, "notes/plain.md", b"# plain", DocumentInput())
        with pytest.raises(InvalidInput, match="ThoughtMCP user's folder"):
            c.documents.rename(brain, "notes/plain.md", free)
        assert c.documents.repo.get(brain.id, free) is None
        assert c.documents.repo.get(brain.id, "notes/plain.md") is not None


def test_a_memory_renamed_into_another_users_folder_is_refused_and_back_into_its_own_is_not(
    c: Container, brain: Brain
) -> None:
    private = remember(c, brain, "My bank PIN is 4711, keep it safe.")
    path = path_of(c, private)
    theirs = user_folder("someone-else") + f"{private}.md"

    with pytest.raises(InvalidInput, match="another ThoughtMCP user's folder"):
        c.documents.rename(brain, path, theirs)
    with pytest.raises(InvalidInput, match="ThoughtMCP user's folder"):
        c.documents.batch(brain, [BatchOp(type="rename", path=path, to=theirs)])
    assert c.documents.repo.get(brain.id, theirs) is None and c.documents.repo.get(brain.id, path) is not None

    owned = c.documents.repo.get(brain.id, path)
    assert owned is not None
    with pytest.raises(InvalidInput, match="another ThoughtMCP user's folder"):  # a write naming its owner
        c.documents.write(brain, theirs, b"My bank PIN is 4711.", DocumentInput(memory=owned.memory))

    c.documents.rename(brain, path, f"notes/{private}.md")
    c.documents.rename(brain, f"notes/{private}.md", path)  # back into its own folder
    assert recalled(c, brain) == [private]
